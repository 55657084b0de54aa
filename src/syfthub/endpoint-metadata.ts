/**
 * The endpoint metadata SyftHub stores (API-CONTRACT 9), built from a knode endpoint and its policies.
 * The hub lists these fields to consumers, and `connect` tells them where to send queries: the path is
 * joined to the owner's domain (the public URL pushed with PUT /users/me).
 */

export type HubEndpointType = 'model_data_source' | 'model' | 'data_source';

export interface HubPolicy {
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
  connect: { type: 'https'; enabled: true; description: ''; config: { path: string } }[];
}

/** The fields of a knode endpoint and policy that the metadata is made of. */
export interface EndpointFacts {
  name: string;
  slug: string;
  summary: string;
  description: string;
  dataset_id: string | null;
  model_id: string | null;
}

export interface PolicyFacts {
  name: string;
  policy_type: string;
  configuration: Readonly<Record<string, unknown>>;
}

/** SyftHub's limits: a longer slug is refused (knode never cuts one), a longer description is cut. */
export const HUB_SLUG_MAX = 63;
export const HUB_DESCRIPTION_MAX = 500;

export function endpointType(endpoint: Pick<EndpointFacts, 'dataset_id' | 'model_id'>): HubEndpointType {
  if (endpoint.dataset_id && endpoint.model_id) return 'model_data_source';
  return endpoint.model_id ? 'model' : 'data_source';
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
    connect: [{ type: 'https', enabled: true, description: '', config: { path: `/api/v1/endpoints/${endpoint.slug}/query` } }],
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
