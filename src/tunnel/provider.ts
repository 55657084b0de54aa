/** One open tunnel: its public URL, a way to close it, and word when the provider loses it. */
export interface TunnelConnection {
  readonly url: string;
  close(): Promise<void>;
  /** Called once if the tunnel drops by itself (not after close()). */
  onDrop(listener: (reason: string) => void): void;
}

export interface TunnelRequest {
  token: string;
  /** The host the tunnel should get, e.g. `ada.syfthub.ngrok.app`. */
  domain: string;
  /** Where the tunnel forwards to: knode's own port on this machine. */
  port: number;
}

/** A tunnel service (ngrok in production, a double in tests). */
export interface TunnelProvider {
  readonly name: string;
  /** Whether the provider can be used here at all (its library loads). */
  available(): Promise<boolean>;
  /** Opens a tunnel; a refusal (bad token, domain not allowed) throws TunnelRefused with the provider's reason. */
  connect(request: TunnelRequest): Promise<TunnelConnection>;
}

export class TunnelRefused extends Error {}

/** The provider's library cannot be loaded here: "tunnel service not configured" (specification, Settings rule 4). */
export class TunnelUnavailable extends Error {}
