import type { Endpoint, Page, Usage } from '../api.ts';
import { Empty, ErrorNotice, Loading } from '../components/ui.tsx';
import { count, date, money } from '../lib/format.ts';
import { useFirstRender, useResource } from '../lib/hooks.ts';

/** The endpoint's latest queries: who asked, what it cost, how it ended. */
export function EndpointUsage(props: { endpoint: Endpoint }) {
  useFirstRender();
  const usage = useResource<Page<Usage>>(`/endpoints/${encodeURIComponent(props.endpoint.slug)}/usage?limit=100`);
  if (usage.error) return <ErrorNotice error={usage.error} />;
  if (!usage.data) return <Loading what="usage" />;
  const { items, total } = usage.data;
  return (
    <section class="card" aria-labelledby="usage-title">
      <div class="card-head">
        <h2 id="usage-title">Usage</h2>
        <button type="button" class="secondary small" onClick={() => void usage.reload()}>
          Refresh
        </button>
      </div>
      {items.length === 0 ? (
        <Empty>No query yet.</Empty>
      ) : (
        <>
          <p class="hint">
            The latest {count(items.length)} of {count(total)} queries.
          </p>
          <table class="table">
            <caption class="visually-hidden">Queries of the endpoint</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Outcome</th>
                <th scope="col" class="num">
                  Tokens
                </th>
                <th scope="col" class="num">
                  Cost
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((row, index) => (
                <tr key={index}>
                  <td class="nowrap">{date(row.created_at)}</td>
                  <td>{row.sender_email}</td>
                  <td>{row.status}</td>
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
