/**
 * The endpoint metadata SyftHub stores (API-CONTRACT 9), built from a knode endpoint and its policies.
 * The hub lists these fields to consumers, and `connect` tells them where to send queries: the path is
 * joined to the base URL of the satellite serving the endpoint (API-CONTRACT 9.1), or, on a hub without
 * the registry, to the owner's domain (the public URL pushed with PUT /users/me).
 */

type HubEndpointType = 'model_data_source' | 'model' | 'data_source';

interface HubPolicy {
  type: string;
  version: '1.0';
  enabled: true;
  description: string;
  config: Record<string, unknown>;
}

export interface HubEndpoint {
  name: string;
  description: string;
  type: HubEndpointType;
  visibility: 'public';
  version: '0.1.0';
  slug: string;
  readme: string;
  policies: HubPolicy[];
  /** At most 10, each as the hub accepts it (see hubTags); `[]` when the endpoint has none. */
  tags: string[];
  connect: { type: 'https'; enabled: true; description: ''; config: HubConnectConfig }[];
}

/**
 * Where consumers send queries: the path, joined to the satellite's base URL (or the account's domain on
 * an older hub); with multi-tenancy, the tenant, which the hub's clients send back as `X-Tenant-Name`.
 */
interface HubConnectConfig {
  path: string;
  tenant_name?: string;
}

/** The fields of a knode endpoint and policy that the metadata is made of. */
export interface EndpointFacts {
  name: string;
  slug: string;
  summary: string;
  description: string;
  dataset_id: string | null;
  model_id: string | null;
  /** knode's comma-separated list, as the owner typed it. */
  tags: string;
}

export interface PolicyFacts {
  name: string;
  policy_type: string;
  configuration: Readonly<Record<string, unknown>>;
}

/** SyftHub's limits: a longer slug is refused (knode never cuts one), a longer description is cut. */
const HUB_SLUG_MAX = 63;
const HUB_DESCRIPTION_MAX = 500;

function endpointType(endpoint: Pick<EndpointFacts, 'dataset_id' | 'model_id'>): HubEndpointType {
  if (endpoint.dataset_id && endpoint.model_id) return 'model_data_source';
  return endpoint.model_id ? 'model' : 'data_source';
}

/** SyftHub's limits on tags (API-CONTRACT 9.1): at most 10, each 1-30 of [a-z0-9-], no edge or double hyphen. */
const HUB_TAGS_MAX = 10;
const HUB_TAG = /^[a-z0-9](?:[a-z0-9-]{0,28}[a-z0-9])?$/;

/**
 * The tags the hub is sent: the list split, trimmed and lower-cased, those the hub would refuse and
 * repeats left out, the first 10 kept. The hub refuses a whole publication (a sync: the whole batch) for
 * one bad tag, and tags are only a help to find an endpoint: a tag never makes a publication fail.
 */
export function hubTags(tags: string): string[] {
  const kept: string[] = [];
  for (const raw of tags.split(',')) {
    const tag = raw.trim().toLowerCase();
    if (!HUB_TAG.test(tag) || tag.includes('--') || kept.includes(tag)) continue;
    kept.push(tag);
    if (kept.length === HUB_TAGS_MAX) break;
  }
  return kept;
}

export function hubEndpoint(endpoint: EndpointFacts, policies: readonly PolicyFacts[]): HubEndpoint {
  return {
    name: endpoint.name,
    // The hub counts characters, not UTF-16 units: cut by code points so no surrogate pair is split.
    description: Array.from(endpoint.summary).slice(0, HUB_DESCRIPTION_MAX).join(''),
    type: endpointType(endpoint),
    visibility: 'public',
    version: '0.1.0',
    slug: endpoint.slug,
    readme: endpoint.description,
    policies: policies.map((policy) => ({
      type: policy.policy_type,
      version: '1.0',
      enabled: true,
      description: policy.name,
      config: { ...policy.configuration },
    })),
    tags: hubTags(endpoint.tags),
    connect: [{ type: 'https', enabled: true, description: '', config: { path: `/api/v1/endpoints/${endpoint.slug}/query` } }],
  };
}

/**
 * The metadata of an endpoint of this tenant on a server with several (SVC_MULTI_TENANCY): its `connect`
 * names the tenant, which the hub's clients send back as `X-Tenant-Name` (API-CONTRACT 9.1, point 5), so
 * that a query reaches the right tenant whatever host the hub sends it to.
 */
export function withTenantName(endpoint: HubEndpoint, tenantName: string): HubEndpoint {
  return {
    ...endpoint,
    connect: endpoint.connect.map((connect) => ({ ...connect, config: { ...connect.config, tenant_name: tenantName } })),
  };
}

/** Why an endpoint cannot go to SyftHub as it is, or undefined when it can. */
export function unpublishableReason(endpoint: Pick<EndpointFacts, 'slug'>): string | undefined {
  if (endpoint.slug.length > HUB_SLUG_MAX) {
    return (
      `The slug '${endpoint.slug}' is ${endpoint.slug.length} characters long; SyftHub accepts at most ${HUB_SLUG_MAX} ` +
      '(knode never shortens a slug: create an endpoint with a shorter one)'
    );
  }
  return undefined;
}
