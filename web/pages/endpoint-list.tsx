import { Badge, Empty, ErrorNotice, Loading, PageHeader } from '../components/ui.tsx';
import { RESPONSE_TYPE_LABELS } from '../lib/endpoints.ts';
import { useFirstRender, useResource, useTitle } from '../lib/hooks.ts';
import type { EndpointSummary } from '../views.ts';

export function EndpointList() {
  useTitle('Endpoints');
  const endpoints = useResource<EndpointSummary[]>('/endpoints/');
  return (
    <>
      <PageHeader
        title="Endpoints"
        subtitle="What others query: a dataset, a model, or both, behind your policies."
        actions={
          <a class="button" href="/endpoints/new">
            Make an endpoint
          </a>
        }
      />
      <ErrorNotice error={endpoints.error} />
      {endpoints.loading && <Loading what="endpoints" />}
      {endpoints.data && <Table endpoints={endpoints.data} />}
    </>
  );
}

function Table(props: { endpoints: EndpointSummary[] }) {
  useFirstRender();
  if (props.endpoints.length === 0) {
    return (
      <Empty>
        <p>No endpoint yet. An endpoint searches a dataset and answers with a model.</p>
        <a class="button" href="/endpoints/new">
          Make an endpoint
        </a>
      </Empty>
    );
  }
  return (
    <table class="table">
      <caption class="visually-hidden">Your endpoints</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Answers with</th>
          <th scope="col">Dataset</th>
          <th scope="col">Model</th>
          <th scope="col">Marketplace</th>
        </tr>
      </thead>
      <tbody>
        {props.endpoints.map((endpoint) => (
          <tr key={endpoint.id}>
            <td>
              <a href={`/endpoints/${endpoint.slug}`}>{endpoint.name}</a>
              <div class="small-text path">{endpoint.slug}</div>
            </td>
            <td>{RESPONSE_TYPE_LABELS[endpoint.response_type]}</td>
            <td>{endpoint.dataset?.name ?? '–'}</td>
            <td>{endpoint.model?.name ?? '–'}</td>
            <td>{endpoint.published ? <Badge tone="good">published</Badge> : <Badge tone="muted">private</Badge>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
