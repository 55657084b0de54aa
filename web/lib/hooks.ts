import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get } from '../api.ts';

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload(): Promise<void>;
}

/** GETs `path` (null: nothing yet) and keeps the answer; `reload` asks again without clearing what is shown. */
export function useResource<T>(path: string | null): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(path !== null);
  const current = useRef(path);
  current.current = path;

  const reload = useCallback(async () => {
    const asked = current.current;
    if (asked === null) return;
    try {
      const value = await get<T>(asked);
      if (current.current !== asked) return;
      setData(value);
      setError(undefined);
    } catch (caught) {
      if (current.current !== asked) return;
      setError(caught instanceof ApiError ? caught : new ApiError(0, String(caught)));
    } finally {
      if (current.current === asked) setLoading(false);
    }
  }, []);

  useEffect(() => {
    setData(undefined);
    setError(undefined);
    setLoading(path !== null);
    void reload();
  }, [path, reload]);

  return { data, error, loading, reload };
}

/**
 * A form's submission: `busy` while it runs; a 422's issues by field (`errors`, which a form's own checks may
 * also set), any other failure as `failure`.
 */
export function useSubmission() {
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  /** Runs `work`; true when it succeeded. */
  const run = useCallback(async (work: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setErrors({});
    setFailure(undefined);
    try {
      await work();
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.issues.length > 0) setErrors(error.fieldErrors());
      else setFailure(error as Error);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, errors, setErrors, failure, run };
}

/** Calls `tick` every `ms` while `active`, one call at a time, and not while the tab is hidden. */
export function usePoll(tick: () => Promise<unknown>, ms: number, active = true): void {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (stopped) return;
      if (document.visibilityState === 'visible') await latest.current().catch(() => undefined);
      if (!stopped) timer = setTimeout(run, ms);
    };
    timer = setTimeout(run, ms);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [ms, active]);
}

let marked = false;

/**
 * Marks the first time real content (a page, not the loading shell) is on screen, once per page load:
 * the browser tests read `knode:first-render` from the Performance API (its time counts from navigation start).
 */
export function useFirstRender(): void {
  useLayoutEffect(() => {
    if (marked) return;
    marked = true;
    performance.mark('knode:first-render');
  }, []);
}

/** Sets the document title while the page is shown. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · knode` : 'knode';
  }, [title]);
}

/** A value that follows `value` after it has stopped changing for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}
