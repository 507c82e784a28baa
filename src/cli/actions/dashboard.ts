/** `dashboard`: what runs (the command is in ../commands/dashboard.ts). */
import { z } from 'zod';
import { loadEnv } from '../../config/env.js';
import { formatIssues } from '../../config/issues.js';
import { Secret } from '../../secret.js';
import { readSecretFiles, secret, secretKeys } from '../../config/secret-files.js';
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
  DASHBOARD_PASSWORD: secret(z.string({ error: PASSWORD_HINT }).min(12, PASSWORD_HINT)),
  DASHBOARD_PORT: z.coerce.number().int().min(0).max(65_535).default(3000),
});

/**
 * The dashboard's settings from `source` (the password may come from DASHBOARD_PASSWORD_FILE); `port` (the
 * option) wins over DASHBOARD_PORT. Throws a UsageError naming every bad key.
 */
export function dashboardSettings(source: NodeJS.ProcessEnv, port?: string): z.infer<typeof dashboardEnvSchema> {
  const files = readSecretFiles(source, secretKeys(dashboardEnvSchema.shape));
  const cleaned = Object.fromEntries(
    Object.keys(dashboardEnvSchema.shape)
      .map((k) => [k, files.env[k]] as const)
      .filter(([, v]) => v !== undefined && v !== ''),
  );
  const parsed = dashboardEnvSchema.safeParse(port === undefined ? cleaned : { ...cleaned, DASHBOARD_PORT: port });
  if (parsed.success && files.problems.length === 0) return parsed.data;
  const issues = parsed.success ? [] : parsed.error.issues.filter((i) => !files.failed.has(String(i.path[0])));
  const lines = [...files.problems, ...(issues.length === 0 ? [] : [formatIssues(issues, (p) => p.join('.'))])];
  throw new UsageError(`dashboard settings:\n${lines.join('\n')}`);
}

export async function dashboard(o: { port?: string; host: string }): Promise<void> {
  const env = loadEnv();
  const settings = dashboardSettings(process.env, o.port);
  const logger = createLogger({ level: env.LOG_LEVEL, format: env.LOG_FORMAT });
  const target = redisTargetOf(env);
  const redis = await connectRedis(createRedis(target, 'worker'), target);
  redis.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis connection error'));
  const queues = createQueues(redis, env.KEY_PREFIX, logger, undefined, env.QUEUE_EVENTS_KEPT);
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
