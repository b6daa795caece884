import { createRoot } from 'react-dom/client';
import { App } from './App';
// window.__uiTest, when a browser test asked for it (lib/testHooks.ts)
import './lib/testHooks';
import './styles.css';
import 'uplot/dist/uPlot.min.css';

createRoot(document.getElementById('root')!).render(<App />);
