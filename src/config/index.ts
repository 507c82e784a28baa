export { loadEnv, envSchema, ConfigError, type Env } from './env.js';
export { loadTenants, parseTenants, tenantSchema, tenantIdSchema, type TenantConfig, type TenantsFile, type PlatformConfig } from './tenants.js';
export { Secret } from '../secret.js';
export { parseDuration, durationMs } from './duration.js';
