#!/usr/bin/env bun
import { type Config, ConfigError, loadConfig } from './config.ts';
import { isDevelopmentMode } from './http/development-mode.ts';
import { runForkedVendorScript } from './runtime/vendor.ts';
import { consoleUrl, startupBanner, startupFailure } from './startup.ts';
import { VERSION } from './version.ts';

const HELP = `knode ${VERSION}: a self-hosted Knowledge Endpoint Service

Usage:
  knode [serve]      start the server (the default)
  knode --version    print the version
  knode --help       print this help

Configuration (environment variables):
  SVC_HOST                  listen address (default 127.0.0.1)
  SVC_PORT                  listen port (default 8080)
  SVC_DATA_DIR              database, keys and model cache (default ./data)
  SVC_ADMIN_API_KEY         admin bearer key; empty = development mode (default empty)
  SVC_JWT_SECRET            HS256 key of local JWTs, 32+ characters (default: generated in the data dir)
  SVC_DATABASE_URL          postgres://… : cluster mode, state shared by replicas (default: SQLite in the data dir)
  SVC_SECRET_KEY            cluster mode: key sealing stored secrets, 32 bytes base64 (SQLite: in the data dir)
  SVC_PUBLIC_URL            public URL of the default tenant; empty = detect the public IP
  SVC_PUBLIC_IP_URL         where the public IP is detected (default https://api.ipify.org)
  SVC_MULTI_TENANCY         admin-key requests must name a tenant with X-Tenant-Name (default false)
  SVC_OPEN_REGISTRATION     anyone may register (default: true in development mode, else false)
  SVC_INGESTION_ROOTS       comma-separated folders datasets may read from (default: your home folder)
  SVC_RATE_LIMIT_PER_HOUR   general API limit per tenant per hour, 0 = off (default 1000)
  SVC_RATE_LIMIT_PER_MINUTE general API limit per tenant per minute, 0 = off (default 100)
  SVC_CORS_ORIGINS          extra allowed browser origins, comma-separated
  SVC_TUNNEL_DOMAIN         tunnel host suffix (default syfthub.ngrok.app)
  SVC_EMBEDDER              default embedder of new datasets (default use-lite; or use-lite-int8)
  SVC_ALLOW_MODEL_DOWNLOAD  let transformers.js download embedding models (default false)
  SVC_MAX_FILE_MB           largest file indexed, in MB (default 100)
  SVC_MAX_TEXT_MB           most text indexed from one file, in MB (default 20)
  SVC_TENANT_QUOTAS         endpoints=500,datasets=100,models=100,policies=50 per tenant (policies: per endpoint)
  SVC_LOG_LEVEL             fatal, error, warn, info, debug, trace or silent (default info)
`;

/** The graceful stop gets this long; then the process exits anyway (systemd and Docker wait 10 s). */
const STOP_DEADLINE_MS = 8_000;
/** Exit status when the graceful stop did not complete. */
const EXIT_ON_SIGNAL = 1;

async function main(argv: string[]): Promise<number> {
  if (await runForkedVendorScript(argv)) return -1; // node-llama-cpp's addon test, in the binary only
  const command = argv[0] ?? 'serve';
  if (command === '--version' || command === '-v' || command === 'version') {
    console.log(VERSION);
    return 0;
  }
  if (command === '--help' || command === '-h' || command === 'help') {
    console.log(HELP);
    return 0;
  }
  if (command !== 'serve') {
    console.error(`knode: unknown command '${command}'\n\n${HELP}`);
    return 2;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`knode: invalid configuration: ${error.message}`);
      return 2;
    }
    throw error;
  }
  // Imported here so that --version and --help answer without loading the whole server.
  const { startServer } = await import('./server.ts');
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(config);
  } catch (error) {
    const line = startupFailure(error, config);
    if (!line) throw error;
    console.error(`knode: ${line}`);
    return 1;
  }
  const facts = { url: server.url, ingestionRoots: config.ingestionRoots, hasUsers: await server.services.auth.hasUsers() };
  // A person at a terminal reads the block; a service manager's log gets the same facts as one JSON line.
  if (process.stdout.isTTY) console.log(`\n${startupBanner(config, facts)}\n`);
  else
    server.app.log.info(
      { console: consoleUrl(server.url), data_dir: config.dataDir, development_mode: isDevelopmentMode(config) },
      'knode is ready',
    );
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      // A second Ctrl-C or SIGTERM: the operator does not want to wait for the graceful stop.
      server.app.log.warn({ signal }, 'second signal: exiting now');
      process.exit(EXIT_ON_SIGNAL);
    }
    stopping = true;
    server.app.log.info({ signal }, 'shutting down');
    // Whatever the graceful stop waits on (a slow request, a model server that does not answer), the
    // process is gone before the usual 10 s after which service managers kill it without a word.
    setTimeout(() => {
      server.app.log.error({ signal, seconds: STOP_DEADLINE_MS / 1000 }, 'graceful stop took too long: exiting');
      process.exit(EXIT_ON_SIGNAL);
    }, STOP_DEADLINE_MS);
    try {
      await server.stop();
    } catch (error) {
      server.app.log.error({ err: error }, 'graceful stop failed');
      process.exit(EXIT_ON_SIGNAL);
    }
    process.exit(0);
  };
  // `on`, not `once`: node-llama-cpp loads signal-exit, whose own listener re-sends the signal (killing
  // the process before the graceful stop) when it finds no other listener left, and a `once` listener
  // is removed before the listeners after it run.
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  return -1; // keep running
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
