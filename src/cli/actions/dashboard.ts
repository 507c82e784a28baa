/** `dashboard`: what runs (the command is in ../commands/dashboard.ts). */
import { z } from 'zod';
import { loadEnv } from '../../config/env.js';
import { formatIssues } from '../../config/issues.js';
import { Secret } from '../../config/secret.js';
import { serverLimitsOf } from '../../http-server.js';
import { createLogger } from '../../logger.js';
import { startDashboard } from '../../ops/dashboard.js';
import { closeQueues, createQueues } from '../../queues/index.js';
import { connectRedis, createRedis, redisTargetOf } from '../../redis/connection.js';
import { out, UsageError } from '../runtime.js';

const PASSWORD_HINT = 'set DASHBOARD_PASSWORD (at least 12 characters): the dashboard never runs without a password';

/** The dashboard's own settings (only this command reads them). */
export const dashboardEnvSchema = z.object({
  DASHBOARD_USER: z.string().min(1).default('admin'),
  DASHBOARD_PASSWORD: z.string({ error: PASSWORD_HINT }).min(12, PASSWORD_HINT),
  DASHBOARD_PORT: z.coerce.number().int().min(0).max(65_535).default(3000),
});

export async function dashboard(o: { port?: string; host: string }): Promise<void> {
  const env = loadEnv();
  const cleaned = Object.fromEntries(
    Object.keys(dashboardEnvSchema.shape)
      .map((k) => [k, process.env[k]] as const)
      .filter(([, v]) => v !== undefined && v !== ''),
  );
  const parsed = dashboardEnvSchema.safeParse(o.port === undefined ? cleaned : { ...cleaned, DASHBOARD_PORT: o.port });
  if (!parsed.success) throw new UsageError(`dashboard settings:\n${formatIssues(parsed.error.issues, (p) => p.join('.'))}`);
  const settings = parsed.data;
  const logger = createLogger({ level: env.LOG_LEVEL, format: env.LOG_FORMAT });
  const target = redisTargetOf(env);
  const redis = await connectRedis(createRedis(target, 'worker'), target);
  redis.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis connection error'));
  const queues = createQueues(redis, env.KEY_PREFIX, logger);
  const board = await startDashboard({
    queues: Object.values(queues),
    port: settings.DASHBOARD_PORT,
    host: o.host,
    username: settings.DASHBOARD_USER,
    password: new Secret(settings.DASHBOARD_PASSWORD),
    logger,
    limits: serverLimitsOf(env),
  });
  out(`dashboard (read-only) at ${board.url} for queues under ${env.KEY_PREFIX}; user ${settings.DASHBOARD_USER}`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await board.close();
  await closeQueues(queues);
  redis.disconnect();
}
