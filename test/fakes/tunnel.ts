/**
 * A tunnel service for tests, standing in for ngrok: it opens "tunnels" at https://<domain>, refuses the
 * tokens it is told to refuse (with a reason, like ngrok's ERR_NGROK codes) and hosts a credential is not
 * bound to, can be made unreachable, and drops a live tunnel on demand.
 */
import type { TunnelConnection, TunnelProvider, TunnelRequest } from '../../src/tunnel/provider.ts';
import { TunnelRefused } from '../../src/tunnel/provider.ts';

export class FakeTunnelProvider implements TunnelProvider {
  readonly name = 'fake';
  readonly requests: TunnelRequest[] = [];
  /** Tokens refused with this reason. */
  readonly refused = new Map<string, string>();
  /** While set, every connection attempt fails with this reason (the service is down). */
  outage: string | undefined;
  /**
   * The one host a token may bind, if it is restricted (an ngrok credential with a `bind:<host>` ACL, as the
   * hub's are): binding another is refused as ngrok refuses it.
   */
  bindingOf: (token: string) => string | undefined = () => undefined;
  private readonly live = new Set<{ drop(reason: string): void }>();
  private installed = true;

  constructor(installed = true) {
    this.installed = installed;
  }

  async available(): Promise<boolean> {
    return this.installed;
  }

  get open(): number {
    return this.live.size;
  }

  async connect(request: TunnelRequest): Promise<TunnelConnection> {
    this.requests.push(request);
    if (this.outage) throw new Error(this.outage);
    const reason = this.refused.get(request.token);
    if (reason) throw new TunnelRefused(reason);
    const bound = this.bindingOf(request.token);
    if (bound !== undefined && bound !== request.domain) {
      throw new TunnelRefused(`ERR_NGROK_319: this credential may not bind the domain '${request.domain}'`);
    }
    let onDrop: ((reason: string) => void) | undefined;
    const handle = {
      drop: (why: string) => {
        this.live.delete(handle);
        onDrop?.(why);
      },
    };
    this.live.add(handle);
    return {
      url: `https://${request.domain}`,
      onDrop: (listener) => {
        onDrop = listener;
      },
      close: async () => {
        this.live.delete(handle);
      },
    };
  }

  /** Drops every live tunnel, as a network failure would. */
  dropAll(reason = 'connection reset'): void {
    for (const handle of [...this.live]) handle.drop(reason);
  }
}
