import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { LogFormat } from './config/env.js';

export type { Logger } from 'pino';

/** Paths pino blanks out, in every casing we have met. Fixed at start (pino's rule). */
export const REDACT_PATHS = [
  'clientSecret',
  '*.clientSecret',
  '*.*.clientSecret',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'accessToken',
  '*.accessToken',
  'access_token',
  '*.access_token',
  'refreshToken',
  '*.refreshToken',
  'refresh_token',
  '*.refresh_token',
  'authorization',
  'Authorization',
  '*.authorization',
  '*.Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'password',
  '*.password',
];

export interface LoggerSettings {
  level: string;
  /** LOG_FORMAT; `json` when not given. */
  format?: LogFormat;
  /** Where the lines go (tests pass a stream to read them back); `pretty` then writes JSON lines. */
  destination?: DestinationStream;
}

/** Whether pino-pretty can be loaded: a development dependency, absent from production installs and the image. */
function prettyInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/**
 * The one logger of a process, on stderr. `json` (default): pino's JSON lines. `json-iso`: the same with an
 * ISO-8601 `time` and `level` as a name (`"info"`), for stacks that expect those. `pretty`: pino-pretty for a
 * terminal; without the package (a production install) JSON lines, and the first line says why.
 */
export function createLogger(settings: LoggerSettings): Logger {
  const format = settings.format ?? 'json';
  const options: LoggerOptions = {
    level: settings.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    ...(format === 'json-iso' ? { timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label: string) => ({ level: label }) } } : {}),
  };
  if (format === 'pretty' && !settings.destination) {
    if (prettyInstalled()) return pino({ ...options, transport: { target: 'pino-pretty', options: { destination: 2 } } });
    const logger = pino(options, pino.destination(2));
    logger.warn('LOG_FORMAT=pretty needs the pino-pretty package, a development dependency left out of production installs; writing JSON lines instead');
    return logger;
  }
  return pino(options, settings.destination ?? pino.destination(2));
}
