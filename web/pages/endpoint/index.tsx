import { apiPath } from '../../api.ts';
import { NotFound } from '../../components/not-found.tsx';
import { Badge, ErrorNotice, Loading, PageHeader } from '../../components/ui.tsx';
import { RESPONSE_TYPE_LABELS } from '../../lib/endpoints.ts';
import { useResource, useTitle } from '../../lib/hooks.ts';
import type { Endpoint } from '../../views.ts';
import { Playground } from './playground.tsx';
import { Policies } from './policies.tsx';
import { Publish } from './publish.tsx';
import { EndpointSettings } from './settings.tsx';
import { EndpointUsage } from './usage.tsx';

const TABS = [
  { id: '', label: 'Playground' },
  { id: 'policies', label: 'Policies' },
  { id: 'publish', label: 'Publish' },
  { id: 'settings', label: 'Settings' },
  { id: 'usage', label: 'Usage' },
] as const;

/** The page's title: the endpoint's name, and the tab's unless it is the playground (the endpoint's own address). */
function titleOf(endpoint: Endpoint | undefined, tab: (typeof TABS)[number] | undefined): string {
  if (!endpoint) return 'Endpoint';
  return tab?.id ? `${endpoint.name} · ${tab.label}` : endpoint.name;
}

function StateBadge(props: { endpoint: Endpoint }) {
  if (props.endpoint.archived) return <Badge tone="muted">archived</Badge>;
  if (props.endpoint.published) return <Badge tone="good">published</Badge>;
  return <Badge tone="muted">private</Badge>;
}

/** An endpoint: its playground, policies, settings and usage, each at its own address (`/endpoints/<slug>/<tab>`). */
export function EndpointPage(props: { slug: string; tab?: string }) {
  const endpoint = useResource<Endpoint>(apiPath`/endpoints/${props.slug}`);
  const tab = TABS.find((candidate) => candidate.id === (props.tab ?? ''));
  useTitle(titleOf(endpoint.data, tab));
  if (!tab) return <NotFound />;
  if (endpoint.error && !endpoint.data) return <ErrorNotice error={endpoint.error} />;
  if (!endpoint.data) return <Loading what="the endpoint" />;
  const data = endpoint.data;
  const base = `/endpoints/${encodeURIComponent(data.slug)}`;
  const parts = [data.dataset && `searches ${data.dataset.name}`, data.model && `answers with ${data.model.name}`].filter(Boolean);
  return (
    <>
      <PageHeader
        title={
          <>
            {data.name} <StateBadge endpoint={data} />
          </>
        }
        subtitle={`${RESPONSE_TYPE_LABELS[data.response_type]}: ${parts.join(', ')}. POST /api/v1/endpoints/${data.slug}/query`}
      />
      <nav class="tabs" aria-label="Endpoint">
        {TABS.map((candidate) => (
          <a
            key={candidate.id}
            href={candidate.id ? `${base}/${candidate.id}` : base}
            aria-current={candidate === tab ? 'page' : undefined}
          >
            {candidate.label}
            {candidate.id === 'policies' && data.policies && data.policies.length > 0 ? ` (${data.policies.length})` : ''}
          </a>
        ))}
      </nav>
      {tab.id === '' && <Playground endpoint={data} />}
      {tab.id === 'policies' && <Policies endpoint={data} reload={endpoint.reload} />}
      {tab.id === 'publish' && <Publish endpoint={data} reload={endpoint.reload} />}
      {tab.id === 'settings' && <EndpointSettings endpoint={data} reload={endpoint.reload} />}
      {tab.id === 'usage' && <EndpointUsage endpoint={data} />}
    </>
  );
}
