/**
 * What an endpoint does with a query, from its links and its response type (specification: Endpoint): it
 * searches its dataset for `raw` and `both`, and generates with its model for `summary` and `both`. Policies
 * (a price per document needs a search) and the query pipeline read it the same way.
 */
export interface EndpointShape {
  readonly dataset_id: string | null;
  readonly model_id: string | null;
  readonly response_type: 'raw' | 'summary' | 'both';
}

export function searches(endpoint: EndpointShape): boolean {
  return endpoint.dataset_id !== null && (endpoint.response_type === 'raw' || endpoint.response_type === 'both');
}

export function generates(endpoint: EndpointShape): boolean {
  return endpoint.model_id !== null && (endpoint.response_type === 'summary' || endpoint.response_type === 'both');
}
