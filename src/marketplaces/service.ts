import type { Static } from 'typebox';
import { conflictAs } from '../db/conflicts.ts';
import { type Db, inTransaction } from '../db/database.ts';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import { outboundFetch } from '../outbound/fetch.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { hubAccountKey } from '../syfthub/account.ts';
import { type AccountingService, HttpAccountingService } from '../syfthub/accounting-service.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import type { MarketplaceRecord } from './codec.ts';
import type { MarketplaceRepository } from './repository.ts';
import type { CreateMarketplaceBody, MarketplaceView, UpdateMarketplaceBody } from './schemas.ts';

type View = Static<typeof MarketplaceView>;

/**
 * What happens elsewhere when a marketplace is connected (publishing/satellites.ts: it registers this
 * server as its satellite once the tenant has a public URL). Never throws: a hub failure there is logged
 * and retried, and the connection stands.
 */
export interface MarketplaceHooks {
  connected(tenant: Tenant, marketplaceId: string): Promise<void>;
  deleted(marketplaceId: string): void;
}

/**
 * Marketplace records. Credentials are proven before they are stored: creating a marketplace, or
 * changing its URL, username or password, logs in to the hub once (400 with the hub's reason when it
 * refuses), and that session is kept for everything the marketplace is used for afterwards.
 */
export class MarketplaceService {
  constructor(
    private readonly db: Db,
    private readonly marketplaces: MarketplaceRepository,
    private readonly box: SecretBox,
    private readonly hubs: HubClients,
    private readonly hooks: MarketplaceHooks | undefined,
    /** What the tenant's calls may reach: its hub and accounting service are called through the outbound module. */
    private readonly outbound: OutboundPolicy,
    private readonly clock: Clock,
  ) {}

  /** The first marketplace of a tenant becomes its default; `is_default: true` moves the default here. */
  async create(tenant: Tenant, body: Static<typeof CreateMarketplaceBody>): Promise<View> {
    // A name conflict is found before the login: the hub allows only 10 logins a minute.
    if ((await this.marketplaces.list(tenant.id)).some((marketplace) => marketplace.name === body.name)) {
      throw new ConflictError(`Marketplace named '${body.name}' already exists`);
    }
    const id = crypto.randomUUID();
    const url = body.url.replace(/\/+$/, '');
    await this.checkAddresses(tenant, { url, accounting_url: body.accounting_url });
    const account = hubAccountKey(url, body.username);
    await this.requireFreeAccount(tenant, account, undefined); // before the login, which the hub rations
    await this.hubs.connect(id, { name: body.name, url, username: body.username, password: body.password }, tenant.id);
    const timestamp = isoNow(this.clock);
    const record: MarketplaceRecord = {
      id,
      tenant_id: tenant.id,
      name: body.name,
      url,
      username: body.username,
      email: body.email ?? null,
      password: this.box.encrypt(body.password),
      is_default: false,
      is_active: body.is_active !== false,
      accounting_url: body.accounting_url?.replace(/\/+$/, '') ?? null,
      accounting_email: body.accounting_email ?? null,
      accounting_password: body.accounting_password ? this.box.encrypt(body.accounting_password) : null,
      account,
      satellite_id: null,
      satellite_url: null,
      created_at: timestamp,
      updated_at: timestamp,
    };
    try {
      // A request that raced this one to the same name or hub account loses at the unique index.
      await conflictAs(`Marketplace named '${body.name}', or this hub account, is already connected`, () =>
        inTransaction(this.db, async (trx) => {
          const first = (await this.marketplaces.count(tenant.id, trx)) === 0;
          if (first || body.is_default) {
            await this.marketplaces.clearDefault(tenant.id, trx);
            record.is_default = true;
          }
          await this.marketplaces.insert(record, trx);
        }),
      );
    } catch (error) {
      this.hubs.forget(id);
      throw error;
    }
    if (record.is_active) await this.hooks?.connected(tenant, id);
    return toView(record);
  }

  async list(tenant: Tenant): Promise<View[]> {
    return (await this.marketplaces.list(tenant.id)).map(toView);
  }

  async get(tenant: Tenant, id: string): Promise<View> {
    return toView(await this.require(tenant, id));
  }

  async update(tenant: Tenant, id: string, body: Static<typeof UpdateMarketplaceBody>): Promise<View> {
    const row = await this.require(tenant, id);
    checkUpdate(body, row);
    const url = body.url?.replace(/\/+$/, '');
    await this.checkAddresses(tenant, { url, accounting_url: body.accounting_url });
    const username = body.username ?? row.username;
    const password = body.password ?? this.box.decrypt(row.password);
    const account = hubAccountKey(url ?? row.url, username);
    const claimsAccount = claimsAnAccount(row, account, body.is_active);
    if (claimsAccount) await this.requireFreeAccount(tenant, account, id);
    const otherAccount = (url !== undefined && url !== row.url) || username !== row.username;
    const credentials = otherAccount || body.password !== undefined;
    if (credentials) {
      await this.hubs.connect(id, { name: body.name ?? row.name, url: url ?? row.url, username, password }, tenant.id);
    }
    const changes = this.fieldChanges(body, url);
    // A satellite belongs to one account of one hub: another account starts without one.
    if (otherAccount) Object.assign(changes, { satellite_id: null, satellite_url: null });
    if (claimsAccount) changes.account = account;
    await this.save(tenant, id, changes, body.is_default === true, body.name ?? row.name);
    if (connectsAnew(row, body.is_active, credentials)) await this.hooks?.connected(tenant, id);
    return this.get(tenant, id);
  }

  /** Writes an update, making the record the default in the same transaction; 409 for a name or account already taken. */
  private async save(tenant: Tenant, id: string, changes: Partial<MarketplaceRecord>, makeDefault: boolean, name: string): Promise<void> {
    await conflictAs(`Marketplace named '${name}', or this hub account, is already connected`, () =>
      inTransaction(this.db, async (trx) => {
        if (makeDefault) {
          await this.marketplaces.clearDefault(tenant.id, trx);
          changes.is_default = true;
        }
        await this.marketplaces.update(tenant.id, id, changes, trx);
      }),
    );
  }

  /** The record's columns the body sets (secrets sealed, addresses without a trailing slash), stamped now. */
  private fieldChanges(body: Static<typeof UpdateMarketplaceBody>, url: string | undefined): Partial<MarketplaceRecord> {
    const changes: Partial<MarketplaceRecord> = { updated_at: isoNow(this.clock) };
    if (body.name !== undefined) changes.name = body.name;
    if (url !== undefined) changes.url = url;
    if (body.username !== undefined) changes.username = body.username;
    if (body.email !== undefined) changes.email = body.email;
    if (body.password !== undefined) changes.password = this.box.encrypt(body.password);
    if (body.is_active !== undefined) changes.is_active = body.is_active;
    if (body.accounting_url !== undefined) changes.accounting_url = body.accounting_url?.replace(/\/+$/, '') ?? null;
    if (body.accounting_email !== undefined) changes.accounting_email = body.accounting_email;
    if (body.accounting_password !== undefined) {
      changes.accounting_password = body.accounting_password ? this.box.encrypt(body.accounting_password) : null;
    }
    return changes;
  }

  /** Removing the default marketplace makes the oldest remaining one the default. */
  async delete(tenant: Tenant, id: string): Promise<void> {
    const row = await this.require(tenant, id);
    this.hubs.forget(id);
    this.hooks?.deleted(id);
    await inTransaction(this.db, async (trx) => {
      await this.marketplaces.delete(tenant.id, id, trx);
      if (row.is_default) {
        const next = await this.marketplaces.oldest(tenant.id, trx);
        if (next) await this.marketplaces.update(tenant.id, next.id, { is_default: true }, trx);
      }
    });
  }

  /**
   * The accounting service that settles a tenant's paid queries (API-CONTRACT 7): that of its default
   * marketplace, with its password opened for the call; undefined when none is configured.
   */
  async accountingFor(tenant: Tenant): Promise<AccountingService | undefined> {
    const marketplace = await this.marketplaces.getDefault(tenant.id);
    if (!marketplace?.accounting_url || !marketplace.accounting_email || !marketplace.accounting_password) return undefined;
    return new HttpAccountingService(
      {
        url: marketplace.accounting_url,
        email: marketplace.accounting_email,
        password: this.box.decrypt(marketplace.accounting_password),
      },
      outboundFetch(await this.outbound.forTenant(tenant.id)),
    );
  }

  /**
   * A URL whose host knode will not call for this tenant (a metadata service, link-local, loopback or private
   * where not allowed) is a 422 on its field, before any login is sent (outbound/reach.ts).
   */
  private async checkAddresses(tenant: Tenant, urls: { url?: string | undefined; accounting_url?: string | null | undefined }) {
    const reach = await this.outbound.forTenant(tenant.id);
    for (const [field, value] of Object.entries(urls)) {
      if (typeof value !== 'string') continue;
      const refused = reach.hostRefusal(new URL(value).hostname);
      if (refused) throw ValidationError.body(field, refused, 'url_refused');
    }
  }

  /**
   * One hub account belongs to one tenant (API-CONTRACT 6): a second record for it, above all in another
   * tenant, would let that tenant be chosen for the first one's satellite tokens. The other tenant is not named.
   */
  private async requireFreeAccount(tenant: Tenant, account: string, exceptId: string | undefined): Promise<void> {
    const holder = await this.marketplaces.findByAccount(account);
    if (!holder || holder.id === exceptId) return;
    if (holder.tenant_id === tenant.id) {
      throw new ConflictError(`This hub account is already connected as marketplace '${holder.name}'`);
    }
    throw new ConflictError('This hub account is already connected to another tenant of this server: a hub account belongs to one tenant');
  }

  private async require(tenant: Tenant, id: string): Promise<MarketplaceRecord> {
    const row = await this.marketplaces.get(tenant.id, id);
    if (!row) throw new NotFoundError(`Marketplace '${id}' not found`);
    return row;
  }
}

function toView(row: MarketplaceRecord): View {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    username: row.username,
    email: row.email,
    is_default: row.is_default,
    is_active: row.is_active,
    accounting_url: row.accounting_url,
    accounting_email: row.accounting_email,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Whether an update moves the record to another hub account, which must then be free. A record deactivated as a
 * duplicate (migration 0005) has no account until it proves it is free.
 */
function claimsAnAccount(row: MarketplaceRecord, account: string, activate: boolean | undefined): boolean {
  return account !== row.account && (row.account !== null || activate === true || row.is_active);
}

/** Whether an update leaves the marketplace active with new credentials, or switches it on. */
function connectsAnew(row: MarketplaceRecord, activate: boolean | undefined, credentials: boolean): boolean {
  const activated = activate === true && !row.is_active;
  return (credentials || activated) && (activate ?? row.is_active);
}

/** 422 for an update that changes nothing, or that would leave the tenant without a default marketplace. */
function checkUpdate(body: Static<typeof UpdateMarketplaceBody>, row: MarketplaceRecord): void {
  if (Object.values(body).every((value) => value === undefined)) {
    throw ValidationError.body([], 'At least one field to change is required', 'missing');
  }
  if (body.is_default === false && row.is_default) {
    throw ValidationError.body('is_default', 'A tenant always has a default marketplace: make another one the default instead');
  }
}
