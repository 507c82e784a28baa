// Type-aware lint, plus the one-way flow of imports between rooms (DESIGN.md, STYLE.md 9).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const rooms = (files, patterns, message, ignores = []) => ({
  files,
  ignores,
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      { patterns: [{ group: patterns, message, allowTypeImports: false }] },
    ],
  },
});

const authForbidden = ['**/platforms/**', '**/mapping/**', '**/state/**', '**/jobs/**'];

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
  rooms(['src/state/**'], ['**/collections/client*', '**/auth/**', '**/platforms/*/**', '**/jobs/**', '**/queues/**', 'bullmq', 'undici'], 'state is Redis storage only'),
  rooms(['src/auth/**'], [...authForbidden, '**/queues/**'], 'auth is the token protocol only', ['src/auth/refresh-queue.ts']),
  // The refresh job's producer: it moves into the queue layer (src/queues) with issue 11's queue step.
  rooms(['src/auth/refresh-queue.ts'], authForbidden, 'auth is the token protocol only'),
  rooms(['src/calls/**'], ['**/jobs/**', '**/queues/**'], 'calls keep campaigns and the call ledger; queues and jobs drive them'),
  rooms(
    ['src/redis/**'],
    ['**/collections/**', '**/auth/**', '**/platforms/**', '**/mapping/**', '**/state/**', '**/calls/**', '**/sync/**', '**/jobs/**', '**/queues/**', '**/ops/**', '**/cli/**', '**/demo/**', '**/simulator/**', '**/app.js', '**/worker.js', '**/cli.js', 'bullmq', 'undici'],
    'redis is the floor every room stands on: it imports nothing of ours but config and logger types',
  ),
  rooms(['src/sync/**'], ['**/jobs/**', '**/queues/**', '**/auth/**', '**/collections/**', 'bullmq', 'undici'], 'the dry run reads the platform and the state; it sends nothing and queues nothing'),
  rooms(['src/simulator/**'], ['**/platforms/**', '**/mapping/**', '**/state/**', '**/auth/**', '**/jobs/**', '**/queues/**', 'bullmq', 'ioredis'], 'the simulator stands alone (it may share the contract schemas)'),
  {
    // Lua runs through src/redis/script.ts only (EVALSHA with the NOSCRIPT fallback, every key in KEYS).
    ignores: ['src/redis/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name=/^(eval|evalsha|eval_ro|evalsha_ro|defineCommand)$/]",
          message: 'run Lua through LuaScript (src/redis/script.ts): no eval outside src/redis',
        },
        {
          selector: "CallExpression[callee.property.name=/^(call|sendCommand)$/] > Literal.arguments:first-child[value=/^eval/i]",
          message: 'run Lua through LuaScript (src/redis/script.ts): no eval outside src/redis',
        },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
