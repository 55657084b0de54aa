import { useMemo, useState } from 'preact/hooks';
import { CheckboxField, Empty, ErrorNotice, Loading, Notice, PageHeader, SelectField } from '../../components/ui.tsx';
import { ChartPanel, ColumnHeads, Stat, useBucketTimes } from '../../components/usage-figures.tsx';
import { count, date, money } from '../../lib/format.ts';
import { useFirstRender, useResource, useTitle } from '../../lib/hooks.ts';
import type { AnalyticsCoverage, AnalyticsSeries, AnalyticsSummary, Dataset, EndpointSummary, QueryTerms, TopUsers } from '../../views.ts';
import { WordCloud } from './word-cloud.tsx';
import './analytics.css';

/** The ranges offered, and how each is counted: by hour for a day, by day beyond. */
const RANGES = [
  { value: '1', label: 'The last 24 hours', days: 1, bucket: 'hour' },
  { value: '7', label: 'The last 7 days', days: 7, bucket: 'day' },
  { value: '30', label: 'The last 30 days', days: 30, bucket: 'day' },
  { value: '90', label: 'The last 90 days', days: 90, bucket: 'day' },
  { value: '365', label: 'The last year', days: 365, bucket: 'day' },
] as const;
const TOP_USERS_PAGE = 10;
/** The top users' last query, short enough for the half-width table (the year is the range's). */
const SHORT_DATE = new Intl.DateTimeFormat('en', { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });

function shortDate(iso: string): string {
  return SHORT_DATE.format(new Date(iso));
}

/**
 * The tenant's analytics: how many queries, from how many callers, what they paid, and what they ask,
 * over a range, for every endpoint or one endpoint or the endpoints of one dataset. The terms are the
 * owner's alone: a member is told so where the word cloud would be.
 */
export function AnalyticsPage() {
  useTitle('Analytics');
  useFirstRender();
  const [range, setRange] = useState<string>('30');
  const [filter, setFilter] = useState('all');
  const [playground, setPlayground] = useState(true);
  const [usersPage, setUsersPage] = useState(0);
  const endpoints = useResource<EndpointSummary[]>('/endpoints/?archived=all');
  const datasets = useResource<Dataset[]>('/datasets/');

  const chosen = RANGES.find((option) => option.value === range) ?? RANGES[2];
  // The range's start, fixed when it is chosen (to the hour, so that the four requests name the same range).
  const query = useMemo(() => {
    const hour = 3_600_000;
    const from = new Date(Math.floor((Date.now() - chosen.days * 86_400_000) / hour) * hour).toISOString();
    const params = new URLSearchParams({ from, include_playground: String(playground) });
    const [kind, id] = filter.split(':');
    if (kind === 'endpoint' && id) params.set('endpoint_id', id);
    if (kind === 'dataset' && id) params.set('dataset_id', id);
    return params;
  }, [chosen, filter, playground]);
  const withParams = (path: string, extra: Record<string, string> = {}) => {
    const params = new URLSearchParams(query);
    for (const [key, value] of Object.entries(extra)) params.set(key, value);
    return `/analytics/${path}?${params}`;
  };

  const summary = useResource<AnalyticsSummary>(withParams('summary'));
  const series = useResource<AnalyticsSeries>(withParams('series', { bucket: chosen.bucket }));
  const users = useResource<TopUsers>(withParams('top-users', { limit: String(TOP_USERS_PAGE), skip: String(usersPage * TOP_USERS_PAGE) }));
  const terms = useResource<QueryTerms>(withParams('terms', { limit: '80' }));
  const refresh = () => Promise.all([summary.reload(), series.reload(), users.reload(), terms.reload()]);

  const filters = [
    { value: 'all', label: 'Every endpoint' },
    ...(endpoints.data ?? []).map((endpoint) => ({ value: `endpoint:${endpoint.id}`, label: `Endpoint: ${endpoint.name}` })),
    ...(datasets.data ?? []).map((dataset) => ({ value: `dataset:${dataset.id}`, label: `Dataset: ${dataset.name}` })),
  ];

  return (
    <>
      <PageHeader
        title="Analytics"
        subtitle="What your endpoints were asked, by whom, and what it earned."
        actions={
          <button type="button" class="secondary" onClick={() => void refresh()}>
            Refresh
          </button>
        }
      />
      <section class="card analytics-filters" aria-label="Filters">
        <SelectField
          label="Range"
          value={range}
          onChange={(value) => {
            setRange(value);
            setUsersPage(0);
          }}
          options={RANGES.map(({ value, label }) => ({ value, label }))}
        />
        <SelectField
          label="Endpoint or dataset"
          value={filter}
          onChange={(value) => {
            setFilter(value);
            setUsersPage(0);
          }}
          options={filters}
          hint="A dataset counts the queries of the endpoints that serve it now."
        />
        <CheckboxField label="Include my questions from the playground" checked={playground} onChange={setPlayground} />
      </section>

      <section class="card" aria-labelledby="analytics-summary-title">
        <h2 id="analytics-summary-title">Summary</h2>
        <ErrorNotice error={summary.error} />
        {summary.data ? <SummaryCards summary={summary.data} /> : !summary.error && <Loading what="the summary" />}
      </section>

      <section class="card" aria-labelledby="analytics-series-title">
        <h2 id="analytics-series-title">Over time</h2>
        <ErrorNotice error={series.error} />
        {series.data ? <SeriesCharts series={series.data} /> : !series.error && <Loading what="the time series" />}
      </section>

      <div class="analytics-columns">
        <section class="card" aria-labelledby="analytics-users-title">
          <h2 id="analytics-users-title">Top users</h2>
          <ErrorNotice error={users.error} />
          {users.data ? (
            <UsersTable users={users.data} page={usersPage} onPage={setUsersPage} />
          ) : (
            !users.error && <Loading what="the top users" />
          )}
        </section>

        <section class="card" aria-labelledby="analytics-terms-title">
          <h2 id="analytics-terms-title">What is asked</h2>
          {terms.error?.status === 403 ? (
            <Notice kind="info">{terms.error.message}. The questions themselves are never stored.</Notice>
          ) : (
            <ErrorNotice error={terms.error} />
          )}
          {terms.data && <Terms terms={terms.data} />}
          {!terms.data && !terms.error && <Loading what="the terms" />}
        </section>
      </div>
    </>
  );
}

function SummaryCards(props: { summary: AnalyticsSummary }) {
  const { summary } = props;
  return (
    <>
      <dl class="stats analytics-stats" data-analytics="summary">
        <Stat name="queries" label="Queries">
          {count(summary.queries)}
        </Stat>
        <Stat name="users" label="Users">
          {count(summary.users)}
        </Stat>
        <Stat name="revenue" label="Revenue">
          {money(summary.revenue_usd)} <span class="of">USD</span>
        </Stat>
        <Stat name="errors" label="Errors" valueClass={summary.errors > 0 ? 'bad' : undefined}>
          {count(summary.errors)}
          {summary.refused > 0 && <span class="of block">{count(summary.refused)} refused by a policy</span>}
        </Stat>
        <Stat name="latency" label="Average latency">
          {summary.average_latency_ms === null ? '–' : `${count(summary.average_latency_ms)} ms`}
        </Stat>
      </dl>
      <Coverage coverage={summary.coverage} what="queries" />
    </>
  );
}

/** Said only when an answer did not read the whole range. */
function Coverage(props: { coverage: AnalyticsCoverage; what: string }) {
  if (!props.coverage.capped) return null;
  return (
    <p class="hint" data-analytics="capped">
      Counted over the newest {count(props.coverage.rows)} {props.what}, since {date(props.coverage.counted_from)}: narrow the range to
      count all of it.
    </p>
  );
}

function SeriesCharts(props: { series: AnalyticsSeries }) {
  const { buckets } = props.series;
  const times = useBucketTimes(buckets);
  const queries = useMemo(() => [{ label: 'Queries', color: '--accent', values: buckets.map((bucket) => bucket.queries) }], [buckets]);
  const users = useMemo(() => [{ label: 'Users', color: '--good', values: buckets.map((bucket) => bucket.users) }], [buckets]);
  const revenue = useMemo(() => [{ label: 'Revenue', color: '--busy', values: buckets.map((bucket) => bucket.revenue_usd) }], [buckets]);
  if (buckets.every((bucket) => bucket.queries === 0)) return <Empty>No query in this range.</Empty>;
  const by = props.series.bucket === 'hour' ? 'hour' : 'day';
  return (
    <>
      <div class="charts" data-analytics="series">
        <ChartPanel heading="Queries" title={`Queries per ${by}`} times={times} series={queries} kind="bars" />
        <ChartPanel heading="Users" title={`Distinct users per ${by}`} times={times} series={users} kind="lines" />
        <ChartPanel heading="Revenue" title={`MPP revenue per ${by}, in USD`} times={times} series={revenue} kind="lines" unit="USD" />
      </div>
      <Coverage coverage={props.series.coverage} what="queries" />
    </>
  );
}

function UsersTable(props: { users: TopUsers; page: number; onPage: (page: number) => void }) {
  const { items, total, skip } = props.users;
  if (total === 0) return <Empty>No caller in this range.</Empty>;
  const last = skip + items.length >= total;
  return (
    <>
      {/* Scrolls sideways on a narrow screen (browsers let the keyboard focus a scroller that has no focusable content). */}
      <div class="table-wrap">
        <table class="table" data-analytics="top-users">
          <caption class="visually-hidden">Callers with the most queries</caption>
          <ColumnHeads columns={['Who', { num: 'Queries' }, { num: 'Errors' }, { num: 'Revenue' }, 'Last query']} />
          <tbody>
            {items.map((user) => (
              <tr key={user.sender_email}>
                <td class="analytics-email">{user.sender_email}</td>
                <td class="num">{count(user.queries)}</td>
                <td class="num">{count(user.errors)}</td>
                <td class="num">{money(user.revenue_usd)}</td>
                <td class="nowrap">{shortDate(user.last_query_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav class="analytics-pager" aria-label="Pages of top users">
        <button type="button" class="secondary small" disabled={props.page === 0} onClick={() => props.onPage(props.page - 1)}>
          Previous
        </button>
        <span class="small-text">
          {count(skip + 1)}–{count(skip + items.length)} of {count(total)}
        </span>
        <button type="button" class="secondary small" disabled={last} onClick={() => props.onPage(props.page + 1)}>
          Next
        </button>
      </nav>
      <Coverage coverage={props.users.coverage} what="queries" />
    </>
  );
}

function Terms(props: { terms: QueryTerms }) {
  const { terms, coverage } = props.terms;
  return (
    <>
      <p class="hint">
        The words your callers' questions were about, larger the more often they were asked; words like "how" or "the" are left out. Only
        you see them, and the questions themselves are never stored.
      </p>
      {terms.length === 0 ? <Empty>No question in this range.</Empty> : <WordCloud terms={terms} />}
      <Coverage coverage={coverage} what="words" />
    </>
  );
}
