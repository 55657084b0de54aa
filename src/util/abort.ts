/**
 * What an aborted operation rejects with: the signal's reason (an `AbortError` unless the caller gave
 * another), or an `AbortError` made here should a runtime have left the reason undefined.
 */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
