import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { createServices, type Services } from './services.ts';

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly services: Services;
  readonly url: string;
  stop(): Promise<void>;
}

/** Opens the data directory, builds the app and listens; `stop` drains requests, then closes the database. */
export async function startServer(config: Config): Promise<RunningServer> {
  const services = await createServices(config);
  const app = await buildApp(services);
  let url: string;
  try {
    url = await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    await app.close();
    await services.close();
    throw error;
  }
  // Stored tunnel tokens reconnect once the port is known; start-up does not wait for them.
  void services.tunnels.start(new URL(url).port ? Number(new URL(url).port) : config.port);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Ingestion is cancelled while in-flight requests finish, not after: a file being embedded must not
      // hold up the stop (its work is queued again for the next start).
      await Promise.all([app.close(), services.ingestion.close()]); // app.close stops accepting, waits for in-flight requests
      await services.close();
    })());
  return { app, services, url, stop };
}
