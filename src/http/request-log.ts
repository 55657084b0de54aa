import { LogController } from 'fastify';

/**
 * fastify's own per-request lines, one a request at `debug` instead of two at `info`: at info they
 * drowned what a person needs to read (start-up, indexing, failures). Failures are still logged at
 * `error` by the error handler (http/error-handler.ts), with the request id.
 */
export class QuietRequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    _error: unknown,
    request: Parameters<LogController['requestCompleted']>[1],
    reply: Parameters<LogController['requestCompleted']>[2],
  ): void {
    request.log.debug({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  }
}
