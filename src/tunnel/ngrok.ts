import { errorMessage } from '../domain/errors.ts';
import { redactSecrets } from '../security/redact.ts';
import { type TunnelConnection, type TunnelProvider, TunnelRefused, type TunnelRequest, TunnelUnavailable } from './provider.ts';

type NgrokModule = typeof import('@ngrok/ngrok');

let loaded: Promise<NgrokModule> | undefined;

/** The ngrok agent library, imported on first use only: most installations never open a tunnel. */
function ngrok(): Promise<NgrokModule> {
  loaded ??= import('@ngrok/ngrok').catch((error: unknown) => {
    loaded = undefined;
    throw new TunnelUnavailable(`the ngrok agent library cannot be loaded: ${(error as Error).message}`);
  });
  return loaded;
}

/**
 * Tunnels through ngrok (the `@ngrok/ngrok` library: no agent binary). The session's own reconnection
 * is turned into a drop: knode's tunnel manager reconnects with its own backoff and publishes the URL.
 */
export class NgrokTunnelProvider implements TunnelProvider {
  readonly name = 'ngrok';

  /** Whether the library loads here (the settings routes answer 404 when it does not). */
  async available(): Promise<boolean> {
    return ngrok().then(
      () => true,
      () => false,
    );
  }

  async connect(request: TunnelRequest): Promise<TunnelConnection> {
    const { SessionBuilder } = await ngrok();
    let dropped: ((reason: string) => void) | undefined;
    let closed = false;
    try {
      const session = await new SessionBuilder()
        .authtoken(request.token)
        .handleDisconnection((_address, error) => {
          if (!closed) {
            closed = true;
            dropped?.(error || 'the ngrok session was disconnected');
          }
          // The manager closes this session and reconnects on its own schedule; answering false instead
          // would make the library throw an uncaught error.
          return true;
        })
        .connect();
      const listener = await session.httpEndpoint().domain(request.domain).listenAndForward(`http://127.0.0.1:${request.port}`);
      const url = listener.url() ?? `https://${request.domain}`;
      return {
        url,
        onDrop: (listenerFn) => {
          dropped = listenerFn;
        },
        close: async () => {
          closed = true;
          await session.close().catch(() => undefined);
        },
      };
    } catch (error) {
      // ngrok's errors carry its reason (e.g. "ERR_NGROK_105: The authtoken you specified is invalid").
      throw new TunnelRefused(redactSecrets(errorMessage(error), [request.token]));
    }
  }
}
