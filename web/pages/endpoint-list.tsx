import { useEffect, useState } from 'preact/hooks';
import { apiPath, post } from '../api.ts';
import { Badge, Empty, ErrorNotice, Loading, Notice, PageHeader } from '../components/ui.tsx';
import { RESPONSE_TYPE_LABELS } from '../lib/endpoints.ts';
import { useFirstRender, useResource, useSubmission, useTitle } from '../lib/hooks.ts';
import type { EndpointSummary } from '../views.ts';

/** The endpoints in use, then the archived ones in a section of their own (`GET /endpoints/?archived=true`). */
export function EndpointList() {
  useTitle('Endpoints');
  const endpoints = useResource<EndpointSummary[]>('/endpoints/');
  const archived = useResource<EndpointSummary[]>('/endpoints/?archived=true');
  // The endpoint just unarchived: its link in the table of those in use takes the focus once it is there.
  const [back, setBack] = useState<EndpointSummary | undefined>(undefined);
  useEffect(() => {
    if (!back || !endpoints.data?.some((endpoint) => endpoint.slug === back.slug)) return;
    document.querySelector<HTMLAnchorElement>(`[data-endpoints="in-use"] a[href="/endpoints/${encodeURIComponent(back.slug)}"]`)?.focus();
  }, [back, endpoints.data]);
  const reload = async () => {
    await Promise.all([endpoints.reload(), archived.reload()]);
  };
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
      <ErrorNotice error={endpoints.error ?? archived.error} />
      {back && <Notice kind="success">{back.name} is unarchived: it answers queries again, and is published again where it was.</Notice>}
      {endpoints.loading && <Loading what="endpoints" />}
      {endpoints.data && <Table endpoints={endpoints.data} archived={archived.data?.length ?? 0} />}
      {archived.data && archived.data.length > 0 && <Archived endpoints={archived.data} reload={reload} onUnarchived={setBack} />}
    </>
  );
}

function Table(props: { endpoints: EndpointSummary[]; archived: number }) {
  useFirstRender();
  if (props.endpoints.length === 0) {
    return (
      <Empty>
        {props.archived > 0 ? (
          <p>No endpoint in use: yours are archived (below).</p>
        ) : (
          <p>No endpoint yet. An endpoint searches a dataset and answers with a model.</p>
        )}
        <a class="button" href="/endpoints/new">
          Make an endpoint
        </a>
      </Empty>
    );
  }
  return (
    <table class="table" data-endpoints="in-use">
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

/** Archived endpoints: hidden from SyftHub and refusing queries, each with its Unarchive button. */
function Archived(props: { endpoints: EndpointSummary[]; reload: () => Promise<void>; onUnarchived: (endpoint: EndpointSummary) => void }) {
  const { busy, failure, run } = useSubmission();
  const unarchive = async (endpoint: EndpointSummary) => {
    await run(async () => {
      await post(apiPath`/endpoints/${endpoint.slug}/unarchive`, {});
      await props.reload();
      props.onUnarchived(endpoint);
    });
  };
  return (
    <section class="card" style={{ marginTop: '1.5rem' }} aria-labelledby="archived-title" data-endpoints="archived">
      <h2 id="archived-title">Archived ({props.endpoints.length})</h2>
      <p class="hint">Hidden from SyftHub and refusing queries; kept with their policies and usage.</p>
      <ErrorNotice error={failure} />
      <table class="table">
        <caption class="visually-hidden">Archived endpoints</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Archived</th>
            <th scope="col">
              <span class="visually-hidden">Action</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.endpoints.map((endpoint) => (
            <tr key={endpoint.id}>
              <td>
                <a href={`/endpoints/${endpoint.slug}/settings`}>{endpoint.name}</a>
                <div class="small-text path">{endpoint.slug}</div>
              </td>
              <td>{endpoint.archived_at ? new Date(endpoint.archived_at).toLocaleString() : '–'}</td>
              <td>
                <button type="button" class="secondary" disabled={busy} onClick={() => void unarchive(endpoint)}>
                  Unarchive <span class="visually-hidden">{endpoint.name}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
