// eslint.config.js - the web UI's lint rules (run by `npm run lint` and the
// ctest web_lint).  ESLint's and typescript-eslint's recommended sets, the
// React hooks rules, and: no `any` (type the API's answers in
// src/lib/types.ts), and every eslint-disable comment must still be needed
// and say why.  Formatting is Prettier's (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/'] },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      // the two classic hooks rules; the plugin's React-Compiler rules
      // (refs, purity, ...) do not fit views that draw from refs on purpose
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['e2e/**/*.mjs', '*.js', '*.ts'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
);
