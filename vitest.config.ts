import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Two cores: two test files at a time keeps timing-sensitive protocol tests honest.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
    // After-hooks in reverse order of registration (vitest's default, stated because test/helpers/redis.ts relies on
    // it): a file's Redis, registered first, stops after the file's own afterAll has closed what used it.
    sequence: { hooks: 'stack' },
    reporters: process.env['CI'] ? ['default', ['json', { outputFile: '.tmp/vitest-report.json' }]] : ['default'],
  },
});
