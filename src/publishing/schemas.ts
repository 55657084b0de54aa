import { Type } from 'typebox';
import { Uuid } from '../http/schemas.ts';

const MarketplaceIds = Type.Union([Type.Array(Uuid, { minItems: 1, maxItems: 100 }), Type.Null()]);

/** `marketplace_ids` is required unless `publish_to_all_marketplaces` is true, which takes precedence. */
export const PublishBody = Type.Object({
  marketplace_ids: Type.Optional(MarketplaceIds),
  publish_to_all_marketplaces: Type.Optional(Type.Boolean()),
});

/** `marketplace_ids` is required unless `unpublish_from_all` is true (every marketplace in `published_to`). */
export const UnpublishBody = Type.Object({
  marketplace_ids: Type.Optional(MarketplaceIds),
  unpublish_from_all: Type.Optional(Type.Boolean()),
});

/** Without `marketplace_ids`, every active marketplace of the tenant that has published endpoints. */
export const SyncBody = Type.Object({
  marketplace_ids: Type.Optional(MarketplaceIds),
});

export const PublicationResult = Type.Object({
  marketplace_id: Type.String(),
  marketplace_name: Type.String(),
  success: Type.Boolean(),
  message: Type.String(),
  error: Type.Union([Type.String(), Type.Null()]),
});

export const PublicationAnswer = Type.Object({
  endpoint_slug: Type.String(),
  results: Type.Array(PublicationResult),
});

/** Marketplace id → the slugs sent to it. */
export const SyncAnswer = Type.Record(Type.String(), Type.Array(Type.String()));

export const MarketplaceStatusView = Type.Object({
  marketplace_id: Type.String(),
  /** knode holds a logged-in session with the hub (it logs in on first use, then keeps the session). */
  logged_in: Type.Boolean(),
  /** The last health report sent to the hub since knode started, and whether the hub took it. */
  last_heartbeat: Type.Union([
    Type.Object({ at: Type.String(), ok: Type.Boolean(), error: Type.Union([Type.String(), Type.Null()]) }),
    Type.Null(),
  ]),
  /** Slugs of the tenant's endpoints published there. */
  published_endpoints: Type.Array(Type.String()),
  /**
   * This knode's satellite at the hub (API-CONTRACT 9.1): the audience of the hub's tokens for it. Null on a
   * hub without the registry, before the tenant has a public URL, or while its registration is retried.
   */
  satellite_id: Type.Union([Type.String(), Type.Null()]),
});
