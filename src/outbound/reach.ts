import type { OutboundAllowList } from '../config.ts';
import type { Principal } from '../domain/principal.ts';
import { type AddressKind, addressKind, type Cidr, canonicalAddress, cidrContains, isMetadataHost, parseCidr } from '../util/ip-ranges.ts';

/**
 * Which addresses one tenant's outbound calls may reach (API-CONTRACT 2, SVC_OUTBOUND_ALLOW). Link-local
 * and cloud metadata addresses never: from there a server hands out its cloud credentials. Loopback and
 * private addresses (a local Ollama, a model server on the LAN) for the first owner, whose machine it is,
 * and the admin key; for any other tenant only where the operator allows them, since otherwise any user
 * could make knode probe the operator's network and services on this machine.
 */
export class Reach {
  private readonly cidrs: Cidr[];
  private readonly hosts: ReadonlySet<string>;

  constructor(
    /** The first owner or the operator: loopback and private addresses are theirs. */
    readonly trusted: boolean,
    private readonly allow: OutboundAllowList,
  ) {
    this.cidrs = allow.cidrs.map((text) => parseCidr(text)).filter((cidr): cidr is Cidr => cidr !== undefined);
    this.hosts = new Set(allow.hosts);
  }

  /**
   * A name for what this reach allows, for caches of clients built with it: two tenants with the same
   * server share a client only when they may reach the same addresses.
   */
  get scope(): string {
    return this.trusted ? 'trusted' : 'restricted';
  }

  /** Why a host may not be called whatever it resolves to (a metadata name), or undefined. */
  hostRefusal(host: string): string | undefined {
    const name = bare(host);
    if (isMetadataHost(name)) return `${name} is a cloud metadata service: knode never calls it`;
    if (canonicalAddress(name) !== undefined) return this.addressRefusal(name, name);
    // `localhost` resolves to this machine without asking DNS: judged now, not at the first call.
    if (name === 'localhost' || name.endsWith('.localhost')) return this.addressRefusal(name, '127.0.0.1');
    return undefined;
  }

  /** Why `host`, resolved to `address`, may not be called; undefined when it may. */
  addressRefusal(host: string, address: string): string | undefined {
    const name = bare(host);
    const kind: AddressKind = addressKind(address);
    const shown = name === bare(address) ? name : `${name} (${bare(address)})`;
    switch (kind) {
      case 'public':
        return undefined;
      case 'metadata':
        return `${shown} is a cloud metadata service: knode never calls it`;
      case 'link-local':
        return `${shown} is a link-local address: knode never calls it`;
      case 'reserved':
        return `${shown} is not a unicast address`;
      case 'loopback':
      case 'private': {
        if (this.trusted || this.allow[kind] || this.hosts.has(name) || this.cidrs.some((cidr) => cidrContains(cidr, address))) {
          return undefined;
        }
        const what = kind === 'loopback' ? 'a loopback address (this machine)' : 'a private network address';
        return `${shown} is ${what}: only the first owner may call it, unless the operator allows it (SVC_OUTBOUND_ALLOW=${kind}, or its host or address range)`;
      }
    }
  }
}

/** The tenant's owner as the ingestion roots decide it (tenants/ingestion-roots.ts: `default`, or the laptop's first user). */
export interface FirstOwners {
  isFirstOwner(tenantId: string): Promise<boolean>;
}

/** Hands out the reach of a tenant, of a caller, or of the operator's own settings. */
export class OutboundPolicy {
  private readonly operatorReach: Reach;
  private readonly tenantReach: Reach;

  constructor(
    private readonly allow: OutboundAllowList,
    private readonly owners: FirstOwners,
  ) {
    this.operatorReach = new Reach(true, allow);
    this.tenantReach = new Reach(false, allow);
  }

  /**
   * What the calls made for a tenant may reach: its models, embedders, marketplaces and wallet RPC are called
   * later without anyone's request (queries from consumers, heartbeats, ingestion), so the tenant decides, not
   * who configured them.
   */
  async forTenant(tenantId: string): Promise<Reach> {
    return (await this.owners.isFirstOwner(tenantId)) ? this.operatorReach : this.tenantReach;
  }

  /** What a call made right now for this caller may reach: the admin key's own probes are the operator's. */
  async forPrincipal(principal: Principal): Promise<Reach> {
    return principal.kind === 'admin' ? this.operatorReach : this.forTenant(principal.tenant.id);
  }

  /** The operator's own settings (SVC_PUBLIC_IP_URL): trusted, except for what nobody may call. */
  operator(): Reach {
    return this.operatorReach;
  }

  /** The SVC_OUTBOUND_ALLOW the policy was made with. */
  get allowList(): OutboundAllowList {
    return this.allow;
  }
}

function bare(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}
