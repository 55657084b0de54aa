import { DomainError } from '../domain/errors.ts';
import { ModelError } from '../llm/provider.ts';

/** What a marketplace consumer reads when the endpoint's model failed or did not answer in time. */
export const MODEL_FAILED_FOR_CONSUMERS = "The endpoint's model could not answer; its owner can see why in the endpoint's usage";
const MODEL_TIMED_OUT_FOR_CONSUMERS = "The endpoint's model did not answer in time; try again later";

/**
 * A failure as a marketplace consumer is told of it. A model's failure names the model's server (often an
 * internal address: `http://192.168.1.4:11434`) and quotes what it said, which is the owner's business, not
 * a stranger's: consumers get the status and a plain sentence; the owner sees the whole reason in the
 * usage record and the log, and so does the owner's own test query.
 */
export function forConsumer(error: unknown): unknown {
  if (!(error instanceof ModelError)) return error;
  return error.kind === 'timeout'
    ? new DomainError('timeout', MODEL_TIMED_OUT_FOR_CONSUMERS, { cause: error })
    : new DomainError('upstream', MODEL_FAILED_FOR_CONSUMERS, { cause: error });
}
