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
    reporters: process.env['CI'] ? ['default', ['json', { outputFile: '.tmp/vitest-report.json' }]] : ['default'],
  },
});
