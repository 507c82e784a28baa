// Type-aware lint, plus the one-way flow of imports between rooms (docs/development.md, "Project layout").
import { readdirSync } from 'node:fs';
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

// Each platform's folder stands alone (issue 37): it may use what platforms share (src/platforms/*.ts and oauth/),
// never another platform's folder. Made from the folders themselves, so a new platform is covered by being added.
// What no platform code imports; repeated in each platform folder's rule (a later rule for the same files replaces an earlier one).
const PLATFORM_ROOM = ['**/collections/**', '**/state/**', '**/auth/**', '**/mapping/**', '**/jobs/**', '**/queues/**'];
const SHARED_PLATFORM_FOLDERS = new Set(['oauth']);
const platformFolders = readdirSync(new URL('./src/platforms/', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory() && !SHARED_PLATFORM_FOLDERS.has(d.name))
  .map((d) => d.name);
const platformRooms = platformFolders.map((name) =>
  rooms(
    [`src/platforms/${name}/**`],
    [...PLATFORM_ROOM, ...platformFolders.filter((other) => other !== name).flatMap((other) => [`**/${other}/**`, `**/platforms/${other}`, `../${other}`])],
    `adapters know nothing of the service, state or auth; a platform's folder imports no other platform's (share code through src/platforms/*.ts or src/platforms/oauth)`,
  ),
);

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
  rooms(['src/config/**'], ['**/collections/**', '**/auth/**', '**/platforms/**', '!**/platforms/registry*', '**/mapping/**', '**/state/**', '**/jobs/**', '**/queues/**', 'bullmq', 'undici'], 'config reads the environment and the tenants file only'),
  rooms(['src/collections/**'], ['**/platforms/**', '**/mapping/**', '**/state/**', '**/auth/**', '**/jobs/**', '**/queues/**', 'bullmq', 'ioredis'], 'the collections client knows nothing of platforms, mapping, state, auth or queues'),
  rooms(['src/mapping/**'], ['**/state/**', '**/auth/**', '**/platforms/*/**', '**/jobs/**', '**/queues/**', '**/collections/client*', '**/collections/http*', 'bullmq', 'ioredis', 'undici', 'node:fs', 'node:fs/*', 'node:net', 'node:http'], 'mapping is pure: no I/O'),
  rooms(['src/platforms/**'], PLATFORM_ROOM, 'adapters know nothing of the service, state or auth'),
  rooms(['src/state/**'], ['**/collections/client*', '**/auth/**', '**/platforms/*/**', '**/jobs/**', '**/queues/**', 'bullmq', 'undici'], 'state is Redis storage only'),
  rooms(['src/auth/**'], ['**/platforms/**', '**/mapping/**', '**/state/**', '**/jobs/**', '**/queues/**'], 'auth is the token protocol only (it reaches its queue through the RefreshJobs port)'),
  rooms(
    ['src/calls/**'],
    ['**/jobs/**', '**/queues/**', '**/auth/**', '**/platforms/**', '**/mapping/**', '**/sync/**', '**/collections/client*', '**/collections/http*', '**/ops/**', '**/cli/**', '**/demo/**', '**/simulator/**', '**/app.js', '**/worker.js', 'bullmq', 'undici'],
    'calls keep campaigns, plans and the call ledger (pure or stored); the steps that ask the service and send are jobs/calls',
  ),
  rooms(
    ['src/queues/**'],
    ['**/jobs/**', '**/state/**', '**/platforms/**', '**/mapping/**', '**/sync/**', '**/collections/client*', '**/collections/http*', '**/ops/**', '**/cli/**', '**/demo/**', '**/simulator/**', '**/app.js', '**/worker.js', '**/cli.js', 'undici'],
    'the queue layer knows each job by its name, data, id and options, never by what it does (processors are jobs/)',
  ),
  rooms(
    ['src/ops/**'],
    ['**/collections/**', '**/auth/**', '**/platforms/**', '**/mapping/**', '**/state/**', '**/calls/**', '**/sync/**', '**/jobs/**', '**/queues/**', '**/redis/**', '**/simulator/**', '**/cli/**', '**/demo/**', '**/app.js', '**/worker.js', '**/cli.js', 'ioredis', 'undici'],
    'ops serves what it is handed (metrics, readiness checks, queues for the dashboard); it builds nothing of ours',
  ),
  rooms(
    ['src/cli/**', 'src/cli.ts'],
    ['**/platforms/*/**', '**/mapping/**', '**/auth/**', '**/collections/client*', '**/collections/http*', '**/redis/lock*', '**/redis/script*', 'bullmq', 'ioredis', 'undici'],
    'the CLI is a thin shell over library functions: no client, connection, lock or queue of its own',
  ),
  {
    // The CLI room's rule again (one rule per file set), plus: commands and src/cli.ts load only what --help needs;
    // a command's action imports src/cli/actions/ when it runs (`await import`, which this rule does not see).
    files: ['src/cli/commands/**', 'src/cli.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/platforms/*/**', '**/mapping/**', '**/auth/**', '**/collections/client*', '**/collections/http*', '**/redis/lock*', '**/redis/script*', 'bullmq', 'ioredis', 'undici'],
              message: 'the CLI is a thin shell over library functions: no client, connection, lock or queue of its own',
              allowTypeImports: false,
            },
            {
              group: ['../../*', './*.js', './*/**', '!./cli/**', './cli/actions/**', '../actions/*', 'zod', 'pino', 'cli-progress', 'date-fns', 'hono', '@hono/*', '@bull-board/*', 'prom-client', 'csv-parse', 'libphonenumber-js'],
              message: 'commands load only commander and ../runtime.js at start (issue 14): import what an action runs inside it, with `await import`',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  rooms(
    ['src/demo/**'],
    ['**/cli/**', '**/cli.js', '**/auth/**', '**/mapping/**', '**/collections/client*', '**/collections/http*', '**/redis/lock*', '**/redis/script*', 'bullmq', 'undici'],
    'the demo drives the app as a user would (producers, stores, the simulator), never the CLI or the protocols',
  ),
  rooms(
    ['src/redis/**'],
    ['**/collections/**', '**/auth/**', '**/platforms/**', '**/mapping/**', '**/state/**', '**/calls/**', '**/sync/**', '**/jobs/**', '**/queues/**', '**/ops/**', '**/cli/**', '**/demo/**', '**/simulator/**', '**/app.js', '**/worker.js', '**/cli.js', 'bullmq', 'undici'],
    'redis is the floor every room stands on: it imports nothing of ours but config and logger types',
  ),
  rooms(
    ['src/webhooks/**'],
    ['**/platforms/**', '**/mapping/**', '**/auth/**', '**/collections/client*', '**/collections/http*', '**/sync/**', '**/cli/**', '**/demo/**', '**/simulator/**', 'undici'],
    'the webhook receiver keeps events and enqueues jobs; it reads no platform and sends nothing (settling is a calls job)',
  ),
  rooms(
    ['src/connect/**'],
    ['**/jobs/**', '**/platforms/*/*-adapter*', '**/platforms/index*', '**/mapping/**', '**/auth/**', '**/collections/**', '**/state/**', '**/sync/**', '**/webhooks/**', '**/cli/**', '**/demo/**', '**/simulator/**', '**/app.js', '**/worker.js', 'bullmq'],
    'the connect room starts token chains (platforms/oauth) and requests runs through the port it is given; it reads no platform data and runs no sync',
  ),
  rooms(
    ['src/api/**'],
    ['**/jobs/**', '**/platforms/**', '!**/platforms/registry*', '**/mapping/**', '**/auth/**', '**/collections/**', '**/sync/**', '**/webhooks/**', '**/cli/**', '**/demo/**', '**/simulator/**', '**/ops/**', '**/app.js', '**/worker.js', 'undici'],
    'the control API authenticates, validates and calls the producers and stores the CLI calls; it runs no sync, reads no platform and sends nothing',
  ),
  rooms(
    ['src/notify/**'],
    ['**/jobs/**', '**/queues/**', '**/state/**', '**/platforms/**', '!**/platforms/registry*', '**/mapping/**', '**/auth/**', '**/collections/**', '**/calls/**', '**/sync/**', '**/connect/**', '**/webhooks/**', '**/cli/**', '**/demo/**', '**/simulator/**', '**/app.js', '**/worker.js', 'bullmq', 'ioredis'],
    'notify makes events, signs and sends one attempt; queueing is src/queues, the job jobs/notify.ts, the record src/state',
  ),
  rooms(['src/sync/**'], ['**/jobs/**', '**/queues/**', '**/auth/**', '**/collections/**', 'bullmq', 'undici'], 'the dry run reads the platform and the state; it sends nothing and queues nothing'),
  ...platformRooms,
  rooms(['src/simulator/**'], ['**/platforms/**', '**/mapping/**', '**/state/**', '**/auth/**', '**/jobs/**', '**/queues/**', 'bullmq', 'ioredis'], 'the simulator stands alone (it may share the contract schemas)'),
  // src/ never imports jobs/ (a rule of its own, so it holds beside every room's): processors depend on src/,
  // never the other way. The worker's composition root takes them from jobs/processors.ts, and nothing else.
  {
    files: ['src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/jobs/**'], message: 'src/ never imports jobs/: processors are wired by src/worker.ts through jobs/processors.ts' }] }],
    },
  },
  {
    files: ['src/worker.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/jobs/**', '!**/jobs/processors.js'], message: 'the worker takes its processors from jobs/processors.ts only' }] }],
    },
  },
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
