import { useMemo, useState } from 'preact/hooks';
import { apiPath } from '../../api.ts';
import { CheckboxField, Empty, ErrorNotice, Loading, SelectField } from '../../components/ui.tsx';
import { ChartPanel, ColumnHeads, Stat, useBucketTimes } from '../../components/usage-figures.tsx';
import { count, date, money } from '../../lib/format.ts';
import { type Resource, useFirstRender, useResource } from '../../lib/hooks.ts';
import type { Endpoint, Page, Usage, UsageSummary } from '../../views.ts';

const RANGES = [
  { value: 'hour', label: 'The last 24 hours, by hour' },
  { value: 'day', label: 'The last 30 days, by day' },
];

/** The endpoint's usage: charts and totals over a range, its top callers, and its latest queries. */
export function EndpointUsage(props: { endpoint: Endpoint }) {
  useFirstRender();
  const [bucket, setBucket] = useState('hour');
  const [playground, setPlayground] = useState(true);
  const slug = props.endpoint.slug;
  const summary = useResource<UsageSummary>(apiPath`/endpoints/${slug}/usage/summary?bucket=${bucket}&include_playground=${playground}`);
  const latest = useResource<Page<Usage>>(apiPath`/endpoints/${slug}/usage?limit=100`);
  const refresh = () => Promise.all([summary.reload(), latest.reload()]);

  return (
    <>
      <section class="card" aria-labelledby="usage-title">
        <div class="card-head">
          <h2 id="usage-title">Usage</h2>
          <button type="button" class="secondary small" onClick={() => void refresh()}>
            Refresh
          </button>
        </div>
        <div class="usage-controls">
          <SelectField label="Range" value={bucket} onChange={setBucket} options={RANGES} />
          <CheckboxField label="Include my questions from the playground" checked={playground} onChange={setPlayground} />
        </div>
        <ErrorNotice error={summary.error} />
        {summary.data ? <Summary summary={summary.data} /> : !summary.error && <Loading what="the usage" />}
      </section>
      <Latest usage={latest} />
    </>
  );
}

function Summary(props: { summary: UsageSummary }) {
  const { totals, buckets, top_callers } = props.summary;
  const times = useBucketTimes(buckets);
  const outcomes = useMemo(
    () => [
      { label: 'Answered', color: '--good', values: buckets.map((bucket) => bucket.succeeded) },
      { label: 'Refused', color: '--busy', values: buckets.map((bucket) => bucket.refused) },
      { label: 'Failed', color: '--bad', values: buckets.map((bucket) => bucket.failed) },
    ],
    [buckets],
  );
  const latency = useMemo(
    () => [
      { label: 'p50', color: '--accent', values: buckets.map((bucket) => bucket.latency_ms.p50) },
      { label: 'p95', color: '--muted', values: buckets.map((bucket) => bucket.latency_ms.p95) },
    ],
    [buckets],
  );
  const refusals = Object.entries(totals.refused_by)
    .map(([policy, refused]) => `${count(refused)} ${policy.replace('_', ' ')}`)
    .join(', ');
  return (
    <>
      <dl class="stats" data-usage="totals">
        <Stat name="queries" label="Queries">
          {count(totals.queries)}
        </Stat>
        <Stat name="answered" label="Answered">
          {count(totals.succeeded)}
        </Stat>
        <Stat name="refused" label="Refused">
          {count(totals.refused)}
          {refusals && <span class="of block">{refusals}</span>}
        </Stat>
        <Stat name="failed" label="Failed" valueClass={totals.failed > 0 ? 'bad' : undefined}>
          {count(totals.failed)}
        </Stat>
        <Stat name="tokens" label="Tokens">
          {count(totals.prompt_tokens + totals.completion_tokens)}
          <span class="of block">
            {count(totals.prompt_tokens)} in, {count(totals.completion_tokens)} out
          </span>
        </Stat>
        <Stat name="cost" label="Cost">
          {money(totals.cost)}
          {totals.charged > 0 && <span class="of block">{money(totals.charged)} collected</span>}
        </Stat>
        <Stat name="latency" label="Latency">
          {totals.latency_ms.p50 === null ? '–' : `${count(totals.latency_ms.p50)} ms`}
          {totals.latency_ms.p95 !== null && <span class="of block">p95 {count(totals.latency_ms.p95)} ms</span>}
        </Stat>
      </dl>
      {totals.queries === 0 ? (
        <Empty>No query in this range.</Empty>
      ) : (
        <div class="charts">
          <ChartPanel
            heading="Queries"
            title="Queries answered, refused and failed over time"
            times={times}
            series={outcomes}
            kind="bars"
          />
          <ChartPanel
            heading="Latency"
            title="Median and 95th percentile latency over time"
            times={times}
            series={latency}
            kind="lines"
            unit="ms"
          />
        </div>
      )}
      {top_callers.length > 0 && (
        <table class="table" data-usage="callers">
          <caption>Top callers</caption>
          <ColumnHeads columns={['Who', { num: 'Queries' }, { num: 'Refused' }, { num: 'Cost' }]} />
          <tbody>
            {top_callers.map((caller) => (
              <tr key={caller.sender_email}>
                <td>{caller.sender_email}</td>
                <td class="num">{count(caller.queries)}</td>
                <td class="num">{count(caller.refused)}</td>
                <td class="num">{money(caller.cost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function Latest(props: { usage: Resource<Page<Usage>> }) {
  const { usage } = props;
  if (usage.error) return <ErrorNotice error={usage.error} />;
  if (!usage.data) return <Loading what="the latest queries" />;
  const { items, total } = usage.data;
  return (
    <section class="card" aria-labelledby="latest-title">
      <h2 id="latest-title">Latest queries</h2>
      {items.length === 0 ? (
        <Empty>No query yet.</Empty>
      ) : (
        <>
          <p class="hint">
            The latest {count(items.length)} of {count(total)} queries.
          </p>
          <table class="table">
            <caption class="visually-hidden">Queries of the endpoint</caption>
            <ColumnHeads columns={['When', 'Who', 'Outcome', { num: 'Tokens' }, { num: 'Cost' }]} />
            <tbody>
              {items.map((row, index) => (
                <tr key={index}>
                  <td class="nowrap">{date(row.created_at)}</td>
                  <td>{row.sender_email}</td>
                  <td title={row.error ?? undefined}>{row.status}</td>
                  <td class="num">{count(row.tokens)}</td>
                  <td class="num">{money(row.total_cost)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
