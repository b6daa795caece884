import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// base './': the built files work wherever gpufl-server serves them from.
// `npx vite` (development) forwards /api to GPUFL_SERVER (default
// http://127.0.0.1:8080), so the UI talks to a running gpufl-server.
export default defineConfig({
  base: './',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1000 },
  server: { proxy: { '/api': process.env.GPUFL_SERVER ?? 'http://127.0.0.1:8080' } },
  test: { environment: 'node', include: ['src/**/*.test.ts'] },
});
