/**
 * Usage analytics of one endpoint (GET /endpoints/{slug}/usage/summary): its recorded queries counted per
 * hour or day, with outcomes, refusals by policy, tokens, costs, latency percentiles and top callers.
 * A pure function of the rows, so it is tested without a database.
 */

export type Bucket = 'hour' | 'day';

/** What one recorded query contributes (query_usage columns). */
export interface UsageRow {
  readonly created_at: string;
  readonly sender_email: string;
  readonly status: 'success' | 'error' | 'refused';
  readonly refused_by: string | null;
  readonly prompt_tokens: number | null;
  readonly completion_tokens: number | null;
  readonly total_cost: number;
  readonly payment_amount: number | null;
  readonly latency_ms: number | null;
}

interface UsageFigures {
  queries: number;
  succeeded: number;
  failed: number;
  refused: number;
  /** Refusals by the type of the policy that refused (`access`, `rate_limit`, `mpp`, `accounting`). */
  refused_by: Record<string, number>;
  prompt_tokens: number;
  completion_tokens: number;
  /** What the answers declared (dataset and model costs), in USD. */
  cost: number;
  /** What payment policies collected (MPP or accounting), in USD. */
  charged: number;
  /** Of the queries that have a duration (null when none). */
  latency_ms: { p50: number | null; p95: number | null };
}

export interface UsageSummary {
  bucket: Bucket;
  from: string;
  to: string;
  totals: UsageFigures;
  /** Every bucket of the range, oldest first, empty ones included (a chart needs them). */
  buckets: (UsageFigures & { start: string })[];
  /** The ten callers with the most queries, then the highest cost. */
  top_callers: { sender_email: string; queries: number; refused: number; cost: number }[];
}

const BUCKET_MS: Record<Bucket, number> = { hour: 3_600_000, day: 86_400_000 };
/** More buckets than this make a chart nobody can read: the range must be narrowed (or the bucket widened). */
export const MAX_BUCKETS = 1_000;
const TOP_CALLERS = 10;

/** The start of the bucket `at` falls in (UTC). */
export function bucketStart(at: Date, bucket: Bucket): Date {
  return new Date(Math.floor(at.getTime() / BUCKET_MS[bucket]) * BUCKET_MS[bucket]);
}

/** How many buckets [from, to) spans. */
export function bucketCount(from: Date, to: Date, bucket: Bucket): number {
  const first = bucketStart(from, bucket).getTime();
  return Math.max(0, Math.ceil((to.getTime() - first) / BUCKET_MS[bucket]));
}

/** Rows of [from, to), in any order. */
export function summarise(rows: readonly UsageRow[], range: { bucket: Bucket; from: Date; to: Date }): UsageSummary {
  const { bucket, from, to } = range;
  const size = BUCKET_MS[bucket];
  const first = bucketStart(from, bucket).getTime();
  const groups = Array.from({ length: bucketCount(from, to, bucket) }, () => [] as UsageRow[]);
  const callers = new Map<string, { sender_email: string; queries: number; refused: number; cost: number }>();
  for (const row of rows) {
    const index = Math.floor((Date.parse(row.created_at) - first) / size);
    if (index < 0 || index >= groups.length) continue;
    (groups[index] as UsageRow[]).push(row);
    const caller = callers.get(row.sender_email) ?? { sender_email: row.sender_email, queries: 0, refused: 0, cost: 0 };
    caller.queries++;
    if (row.status === 'refused') caller.refused++;
    caller.cost += row.total_cost + (row.payment_amount ?? 0);
    callers.set(row.sender_email, caller);
  }
  return {
    bucket,
    from: from.toISOString(),
    to: to.toISOString(),
    totals: figures(groups.flat()),
    buckets: groups.map((group, index) => ({ start: new Date(first + index * size).toISOString(), ...figures(group) })),
    top_callers: [...callers.values()]
      .sort((a, b) => b.queries - a.queries || b.cost - a.cost || a.sender_email.localeCompare(b.sender_email))
      .slice(0, TOP_CALLERS)
      .map((caller) => ({ ...caller, cost: money(caller.cost) })),
  };
}

function figures(rows: readonly UsageRow[]): UsageFigures {
  const refusedBy: Record<string, number> = {};
  const statuses = { success: 0, error: 0, refused: 0 };
  let cost = 0;
  let charged = 0;
  let promptTokens = 0;
  let completionTokens = 0;
  const latencies: number[] = [];
  for (const row of rows) {
    statuses[row.status]++;
    if (row.status === 'refused') {
      const policy = row.refused_by ?? 'unknown';
      refusedBy[policy] = (refusedBy[policy] ?? 0) + 1;
    }
    cost += row.total_cost;
    charged += row.payment_amount ?? 0;
    promptTokens += row.prompt_tokens ?? 0;
    completionTokens += row.completion_tokens ?? 0;
    if (row.latency_ms !== null) latencies.push(row.latency_ms);
  }
  latencies.sort((a, b) => a - b);
  return {
    queries: rows.length,
    succeeded: statuses.success,
    failed: statuses.error,
    refused: statuses.refused,
    refused_by: refusedBy,
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    cost: money(cost),
    charged: money(charged),
    latency_ms: { p50: percentile(latencies, 0.5), p95: percentile(latencies, 0.95) },
  };
}

/** The nearest-rank percentile of sorted values (null when there are none). */
function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number;
}

/** Sums of float costs, without their rounding noise (1e-9 USD). */
function money(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}
