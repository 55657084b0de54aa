import pino, { type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.ts';

/**
 * knode's log: one JSON object a line for a service manager or a log collector, and readable lines
 * (time, level, message, fields) when a person watches a terminal. pino-pretty is used as a stream on
 * this thread, not as a pino transport: transports run in worker threads that a compiled binary cannot
 * start from a package path. Authorization headers are never logged.
 */
export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: ['req.headers.authorization'] };
  if (destination) return pino(options, destination);
  if (process.stdout.isTTY) {
    return pino(options, pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', singleLine: true }));
  }
  return pino(options);
}
