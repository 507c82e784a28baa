// Type-aware lint, plus the one-way flow of imports between rooms (DESIGN.md, STYLE.md 9).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const rooms = (files, patterns, message) => ({
  files,
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      { patterns: [{ group: patterns, message, allowTypeImports: false }] },
    ],
  },
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.tmp/**', 'bin/**', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
    },
  },
  rooms(['src/config/**'], ['**/collections/**', '**/auth/**', '**/platforms/**', '**/mapping/**', '**/state/**', '**/jobs/**', '**/queues/**', 'bullmq', 'undici'], 'config reads the environment and the tenants file only'),
  rooms(['src/collections/**'], ['**/platforms/**', '**/mapping/**', '**/state/**', '**/auth/**', '**/jobs/**', '**/queues/**', 'bullmq', 'ioredis'], 'the collections client knows nothing of platforms, mapping, state, auth or queues'),
  rooms(['src/mapping/**'], ['**/state/**', '**/auth/**', '**/platforms/*/**', '**/jobs/**', '**/queues/**', '**/collections/client*', '**/collections/http*', 'bullmq', 'ioredis', 'undici', 'node:fs', 'node:fs/*', 'node:net', 'node:http'], 'mapping is pure: no I/O'),
  rooms(['src/platforms/**'], ['**/collections/**', '**/state/**', '**/auth/**', '**/mapping/**', '**/jobs/**', '**/queues/**'], 'adapters know nothing of the service, state or auth'),
  rooms(['src/state/**'], ['**/collections/client*', '**/auth/**', '**/platforms/*/**', '**/jobs/**', 'bullmq', 'undici'], 'state is Redis storage only'),
  rooms(['src/auth/**'], ['**/platforms/**', '**/mapping/**', '**/state/**', '**/jobs/**'], 'auth is the token protocol only'),
  rooms(['src/sync/**'], ['**/jobs/**', '**/queues/**', '**/auth/**', '**/collections/**', 'bullmq', 'undici'], 'the dry run reads the platform and the state; it sends nothing and queues nothing'),
  rooms(['src/simulator/**'], ['**/platforms/**', '**/mapping/**', '**/state/**', '**/auth/**', '**/jobs/**', '**/queues/**', 'bullmq', 'ioredis'], 'the simulator stands alone (it may share the contract schemas)'),
  {
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
