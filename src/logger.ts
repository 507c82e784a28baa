import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

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
  pretty?: boolean;
  /** Where the JSON lines go (tests pass a stream to read them back). */
  destination?: DestinationStream;
}

/** The one logger of a process. JSON lines by default; pretty output only when asked. */
export function createLogger(settings: LoggerSettings): Logger {
  const options: LoggerOptions = {
    level: settings.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
  };
  if (settings.pretty && !settings.destination) {
    const require = createRequire(import.meta.url);
    try {
      require.resolve('pino-pretty');
    } catch {
      throw new Error('LOG_PRETTY=true needs the pino-pretty package (npm install pino-pretty); it is a development tool.');
    }
    return pino({ ...options, transport: { target: 'pino-pretty', options: { destination: 2 } } });
  }
  return settings.destination ? pino(options, settings.destination) : pino(options, pino.destination(2));
}
