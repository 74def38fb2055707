// Lint rules of the project (ESLint with typescript-eslint): the recommended
// sets, over the TypeScript sources, tests, benchmarks and the JS launchers.
// Formatting is Prettier's (.prettierrc.json); `npm run lint` runs both.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'shared/generated/', 'data/', '.cache/', '.tap/', 'bench/.data/', 'test/fixtures/'] },
  // The sample site's scripts run in a browser.
  { files: ['conf/sample-site/**/*.js', 'archive/replay/static/**/*.js', 'archive/web/static/**/*.js'], languageOptions: { globals: { ...globals.browser } } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // `!` after a lookup the code has just made sure of is used on purpose.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Unused arguments keep a callback's shape readable when named with a leading _.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
);
