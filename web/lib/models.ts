import type { Model } from '../views.ts';

/** What a model runs: the server's model name, or the GGUF file. */
export function modelTarget(model: Pick<Model, 'dtype' | 'configuration'>): string {
  const { model: name, base_url, model_path } = model.configuration;
  if (typeof model_path === 'string') return model_path;
  return [name, base_url].filter((part) => typeof part === 'string').join(' at ');
}
