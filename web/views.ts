/**
 * What the console reads of the API: each type is the server's own TypeBox schema of that answer
 * (`Static<typeof …View>`), so a field the server adds, renames or drops shows up here at type-check time
 * instead of drifting from a hand-written copy. Every import is `import type`: the bundler erases them, so
 * nothing of the server is shipped to the browser (test/architecture.test.ts keeps it so), and
 * web/tsconfig.json type-checks the schema files they name.
 */
import type { Static } from 'typebox';
import type { AnalyticsSeriesView, AnalyticsSummaryView, TermsView, TopUsersView } from '../src/analytics/schemas.ts';
import type { AccessToken as AccessTokenView, Me as MeView, SetupView } from '../src/auth/schemas.ts';
import type { FolderListingView } from '../src/console/schemas.ts';
import type { FeedStateView } from '../src/datasets/feed-schemas.ts';
import type { DatasetFileView, DatasetView, ReferencesView, StorageView } from '../src/datasets/schemas.ts';
import type { SelectionEntryView } from '../src/datasets/selection-schemas.ts';
import type {
  CreatedEndpointView,
  EndpointDetail,
  EndpointListItem,
  GenerationDefaults as GenerationDefaultsSchema,
  TypeView,
} from '../src/endpoints/schemas.ts';
import type { Page as ServerPage } from '../src/http/pagination.ts';
import type { MarketplaceView } from '../src/marketplaces/schemas.ts';
import type { DiscoverView, ModelHealthView, ModelView, SummaryView } from '../src/models/schemas.ts';
import type { AccessCheckView, PolicySummary as PolicySummarySchema } from '../src/policies/schemas.ts';
import type { PublicUrlView } from '../src/publishing/public-url-schemas.ts';
import type {
  MarketplaceStatusView,
  PublicationAnswer as PublicationAnswerSchema,
  PublicationResult as PublicationResultSchema,
  SyncAnswer,
} from '../src/publishing/schemas.ts';
import type { PolicyEntryView, UsageRecordView, UsageSummaryView } from '../src/query/schemas.ts';
import type { MemberView } from '../src/tenants/schemas.ts';
import type { TunnelView } from '../src/tunnel/schemas.ts';
import type { SchemaIssue } from '../src/util/json-schema.ts';

/** One `{loc, msg, type}` of a 422's `detail`. */
export type Issue = SchemaIssue;

/** A list route's envelope (`?skip=&limit=`). */
export type Page<T> = ServerPage<T>;

export type Configuration = Record<string, unknown>;

export type SetupStatus = Static<typeof SetupView>;
export type Me = Static<typeof MeView>;
/** `POST /auth/login`. */
export type AccessToken = Static<typeof AccessTokenView>;
export type Member = Static<typeof MemberView>;

export type Dataset = Static<typeof DatasetView>;
export type DatasetFile = Static<typeof DatasetFileView>;
export type FeedState = Static<typeof FeedStateView>;
export type SelectionEntry = Static<typeof SelectionEntryView>;
export type References = Static<typeof ReferencesView>;
export type Reference = References['documents'][number];
export type Storage = Static<typeof StorageView>;
export type FolderListing = Static<typeof FolderListingView>;

export type Model = Static<typeof ModelView>;
export type ModelHealth = Static<typeof ModelHealthView>;
/** What a query's `summary` holds, and what `POST /models/{id}/test` answers. */
export type ModelAnswer = Static<typeof SummaryView>;
/** What `POST /models/discover` found at a server. */
export type DiscoveredModels = Static<typeof DiscoverView>;

/** `GET /endpoints/{slug}`: the endpoint with its dataset, model and policies. */
export type Endpoint = Static<typeof EndpointDetail>;
/** An item of `GET /endpoints/`. */
export type EndpointSummary = Static<typeof EndpointListItem>;
export type CreatedEndpoint = Static<typeof CreatedEndpointView>;
export type GenerationDefaults = Static<typeof GenerationDefaultsSchema>;
export type ResponseType = Endpoint['response_type'];

/** A policy as the endpoint's detail embeds it (with its configuration). */
export type Policy = Endpoint['policies'][number];
/** An item of `GET /policies`: no configuration. */
export type PolicySummary = Static<typeof PolicySummarySchema>;
export type AccessCheckResult = Static<typeof AccessCheckView>;
/** One policy's part in a query answer (`policy_metadata.entries`). */
export type PolicyEntry = Static<typeof PolicyEntryView>;

export type Usage = Static<typeof UsageRecordView>;
export type UsageSummary = Static<typeof UsageSummaryView>;

/** The tenant's analytics (`GET /analytics/...`): every endpoint's queries, or one endpoint's or one dataset's. */
export type AnalyticsSummary = Static<typeof AnalyticsSummaryView>;
export type AnalyticsSeries = Static<typeof AnalyticsSeriesView>;
export type TopUsers = Static<typeof TopUsersView>;
/** The word cloud's terms (the owner's only). */
export type QueryTerms = Static<typeof TermsView>;
export type AnalyticsCoverage = AnalyticsSummary['coverage'];

export type Marketplace = Static<typeof MarketplaceView>;
export type MarketplaceStatus = Static<typeof MarketplaceStatusView>;
export type PublicationResult = Static<typeof PublicationResultSchema>;
/** `POST /endpoints/{slug}/publish` and `/unpublish`: each marketplace's result. */
export type PublicationAnswer = Static<typeof PublicationAnswerSchema>;
/** `POST /endpoints/sync`: marketplace id → the slugs sent there. */
export type Synced = Static<typeof SyncAnswer>;
export type PublicUrl = Static<typeof PublicUrlView>;
export type Tunnel = Static<typeof TunnelView>;

/**
 * The JSON Schema of a type's configuration, as the console's forms read it: the server serves it as an
 * open object (`configuration_schema`), these are the keywords the forms use.
 */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  examples?: unknown[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  pattern?: string;
  format?: string;
}

/** A dataset, model or policy type of `GET /types`, its configuration schema read as a JsonSchema. */
export type TypeInfo = Omit<Static<typeof TypeView>, 'configuration_schema'> & { configuration_schema: JsonSchema };

export type Types = Record<'dataset' | 'model' | 'policy', TypeInfo[]>;
