import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import {
  MAX_TOKENS_MAX,
  NAME_MAX_LENGTH,
  SHORT_TEXT_MAX_LENGTH,
  SPEC_MAX_TOKENS,
  SPEC_TEMPERATURE,
  TEMPERATURE_MAX,
} from '../../../src/http/field-bounds.ts';
import { apiPath, del, get, patch, post } from '../../api.ts';
import { errorsUnder } from '../../components/schema-form.tsx';
import { CheckboxField, ErrorNotice, Loading, Notice, SelectField, SubmitButton, TextField } from '../../components/ui.tsx';
import { ANSWER_TOKENS, allowedTypes, generationDefaults, RESPONSE_TYPE_LABELS } from '../../lib/endpoints.ts';
import { useFirstRender, useResource, useSubmission } from '../../lib/hooks.ts';
import type { CreatedEndpoint, Dataset, Endpoint, GenerationDefaults, Model, PublicationAnswer } from '../../views.ts';
import { ArchiveSection } from './archive.tsx';

/** Name, summary and description, and what a query that omits them gets (`generation_defaults`). */
export function EndpointSettings(props: { endpoint: Endpoint; reload: () => Promise<void> }) {
  useFirstRender();
  const { endpoint } = props;
  const { route } = useLocation();
  const defaults = endpoint.generation_defaults;
  const [name, setName] = useState(endpoint.name);
  const [summary, setSummary] = useState(endpoint.summary);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [systemPrompt, setSystemPrompt] = useState(defaults.system_prompt ?? '');
  const [temperature, setTemperature] = useState(defaults.temperature === undefined ? '' : String(defaults.temperature));
  const [maxTokens, setMaxTokens] = useState(defaults.max_tokens === undefined ? '' : String(defaults.max_tokens));
  const [specStops, setSpecStops] = useState(defaults.stop_sequences === undefined);
  const [stops, setStops] = useState((defaults.stop_sequences ?? []).map((stop) => JSON.stringify(stop).slice(1, -1)).join('\n'));
  const [saved, setSaved] = useState(false);
  const { busy, errors, failure, run } = useSubmission();

  const save = async (event: Event) => {
    event.preventDefault();
    const generation: GenerationDefaults = {};
    if (systemPrompt.trim()) generation.system_prompt = systemPrompt;
    if (temperature !== '') generation.temperature = Number(temperature);
    if (maxTokens !== '') generation.max_tokens = Number(maxTokens);
    if (!specStops) {
      // One per line, written as in JSON strings so that a new line can be given as \n.
      generation.stop_sequences = stops
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          try {
            return JSON.parse(`"${line.replace(/"/g, '\\"')}"`) as string;
          } catch {
            return line;
          }
        });
    }
    setSaved(false);
    await run(async () => {
      await patch(apiPath`/endpoints/${endpoint.slug}`, { name, summary, description, generation_defaults: generation });
      setSaved(true);
      await props.reload();
    });
  };

  const remove = async () => {
    if (!confirm(`Delete the endpoint '${endpoint.name}'? It is also taken off the marketplaces it is published on.`)) return;
    await run(async () => {
      await del(apiPath`/endpoints/${endpoint.slug}`);
      route('/endpoints');
    });
  };

  const generationErrors = errorsUnder(errors, 'generation_defaults');
  return (
    <>
      <form class="card form" onSubmit={save} aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <TextField label="Name" required maxLength={NAME_MAX_LENGTH} value={name} onInput={setName} error={errors.name} />
        <TextField
          label="Summary"
          hint="One line; the marketplace shows it."
          maxLength={SHORT_TEXT_MAX_LENGTH}
          value={summary}
          onInput={setSummary}
          error={errors.summary}
        />
        <TextField
          label="Description"
          multiline
          rows={5}
          hint="The longer story (Markdown): the marketplace's readme."
          value={description}
          onInput={setDescription}
          error={errors.description}
        />
        {endpoint.model && (
          <fieldset>
            <legend>Generation defaults</legend>
            <p class="hint">What a query that does not say otherwise gets.</p>
            <TextField
              label="System prompt"
              multiline
              rows={3}
              hint="Sent first, before the passages found."
              value={systemPrompt}
              onInput={setSystemPrompt}
              error={generationErrors.system_prompt}
            />
            <div class="options-grid">
              <TextField
                label="Temperature"
                type="number"
                min={0}
                max={TEMPERATURE_MAX}
                step={0.1}
                placeholder={String(SPEC_TEMPERATURE)}
                value={temperature}
                onInput={setTemperature}
                error={generationErrors.temperature}
              />
              <TextField
                label="Answer length (max tokens)"
                type="number"
                min={1}
                max={MAX_TOKENS_MAX}
                placeholder={String(SPEC_MAX_TOKENS)}
                hint={`A token is about ¾ of a word; empty: the specification's ${SPEC_MAX_TOKENS} (about 75 words).`}
                value={maxTokens}
                onInput={setMaxTokens}
                error={generationErrors.max_tokens}
              />
            </div>
            <CheckboxField
              label="Stop at the first line break (the specification's default)"
              hint="SyftHub's clients send no stop sequences: with this, their answers end at the first new line."
              checked={specStops}
              onChange={setSpecStops}
            />
            {!specStops && (
              <TextField
                label="Stop sequences"
                multiline
                rows={2}
                hint="One per line (\n for a line break); none: answers run to max tokens."
                value={stops}
                onInput={setStops}
                error={generationErrors.stop_sequences}
              />
            )}
          </fieldset>
        )}
        <ErrorNotice error={failure} />
        {saved && <Notice kind="success">Saved.</Notice>}
        <div class="form-actions">
          <SubmitButton busy={busy} busyLabel="Saving…">
            Save
          </SubmitButton>
        </div>
      </form>
      {/* Replacing makes the endpoint again, in use and on no marketplace: an archived one is unarchived first. */}
      {!endpoint.archived && <Replace endpoint={endpoint} reload={props.reload} />}
      <ArchiveSection endpoint={endpoint} reload={props.reload} />
      <section class="card danger-zone" aria-labelledby="delete-title">
        <h2 id="delete-title">Delete the endpoint</h2>
        <p>Its policies and usage records go with it; its dataset and model stay.</p>
        <button type="button" class="danger" onClick={remove}>
          Delete {endpoint.name}
        </button>
      </section>
    </>
  );
}

/**
 * An endpoint's dataset, model and answer type cannot change (the API's rule: consumers rely on what an endpoint
 * is). Replacing it deletes it and creates it again under the same slug, with the new choices and everything
 * else copied: name, summary, description, tags, generation defaults, its policies, and its publication on the
 * same marketplaces. Its usage history goes with the old one. Should the new one be refused, the old one is put
 * back as it was.
 */
function Replace(props: { endpoint: Endpoint; reload: () => Promise<void> }) {
  const { endpoint } = props;
  const [open, setOpen] = useState(false);
  const opener = useRef<HTMLButtonElement>(null);
  const closed = useRef(false);
  // Closing the form gives the focus back to the button it replaced.
  useEffect(() => {
    if (!open && closed.current) opener.current?.focus();
  }, [open]);
  if (!open) {
    return (
      <section class="card" aria-labelledby="replace-title">
        <h2 id="replace-title">Dataset, model and answer type</h2>
        <p>
          This endpoint searches {endpoint.dataset ? <strong>{endpoint.dataset.name}</strong> : 'no dataset'} and answers with{' '}
          {endpoint.model ? <strong>{endpoint.model.name}</strong> : 'no model'} (
          {RESPONSE_TYPE_LABELS[endpoint.response_type].toLowerCase()}). These cannot change in place: replacing the endpoint makes it again
          with your choice, its policies and publication copied.
        </p>
        <button type="button" class="secondary" ref={opener} onClick={() => setOpen(true)}>
          Replace the dataset, model or answer type…
        </button>
      </section>
    );
  }
  return (
    <ReplaceForm
      endpoint={endpoint}
      reload={props.reload}
      onClose={() => {
        closed.current = true;
        setOpen(false);
      }}
    />
  );
}

interface Replaced {
  steps: string[];
}

/** Whether a replacement would make the endpoint as it is: the same dataset, model and answer type. */
function isCurrentChoice(endpoint: Endpoint, datasetId: string, modelId: string, responseType: Endpoint['response_type']): boolean {
  return datasetId === (endpoint.dataset?.id ?? '') && modelId === (endpoint.model?.id ?? '') && responseType === endpoint.response_type;
}

function ReplaceForm(props: { endpoint: Endpoint; reload: () => Promise<void>; onClose: () => void }) {
  const { endpoint } = props;
  const datasets = useResource<Dataset[]>('/datasets/');
  const models = useResource<Model[]>('/models/');
  const [datasetId, setDatasetId] = useState(endpoint.dataset?.id ?? '');
  const [modelId, setModelId] = useState(endpoint.model?.id ?? '');
  const [responseType, setResponseType] = useState<Endpoint['response_type']>(endpoint.response_type);
  const [done, setDone] = useState<Replaced | undefined>(undefined);
  const { busy, errors, setErrors, failure, run } = useSubmission();
  const allowed = allowedTypes(datasetId, modelId);
  const chosenType = allowed.includes(responseType) ? responseType : (allowed[0] ?? 'both');
  const heading = useRef<HTMLHeadingElement>(null);
  // The form replaces the button that opened it: the focus goes to its heading once it is shown.
  const ready = Boolean(datasets.data && models.data);
  useEffect(() => {
    if (ready) heading.current?.focus();
  }, [ready]);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (isCurrentChoice(endpoint, datasetId, modelId, chosenType)) {
      setErrors({ _: 'Nothing to replace: choose another dataset, model or answer type.' });
      return;
    }
    if (
      !confirm(
        `Replace '${endpoint.name}'? It is deleted and made again at the same address with your choice; its policies and publication are copied, its usage history is deleted with it.`,
      )
    )
      return;
    setDone(undefined);
    await run(async () => {
      // The endpoint as it is now (its policies and marketplaces), not as the page last saw it.
      const old = await get<Endpoint>(apiPath`/endpoints/${endpoint.slug}`);
      const steps = await replaceEndpoint(old, { dataset_id: datasetId || null, model_id: modelId || null, response_type: chosenType });
      setDone({ steps });
      await props.reload();
      heading.current?.focus();
    });
  };

  if (datasets.error || models.error) return <ErrorNotice error={datasets.error ?? models.error} />;
  if (!datasets.data || !models.data) return <Loading what="your datasets and models" />;
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="replace-title" data-replace>
      <h2 id="replace-title" tabIndex={-1} ref={heading}>
        Replace the dataset, model or answer type
      </h2>
      <ReplaceWarning endpoint={endpoint} />
      <SelectField
        label="Dataset"
        value={datasetId}
        onChange={setDatasetId}
        error={errors.dataset_id}
        options={[{ value: '', label: 'None' }, ...datasets.data.map((dataset) => ({ value: dataset.id, label: dataset.name }))]}
      />
      <SelectField
        label="Model"
        value={modelId}
        onChange={setModelId}
        error={errors.model_id}
        options={[{ value: '', label: 'None' }, ...models.data.map((model) => ({ value: model.id, label: model.name }))]}
      />
      <SelectField
        label="It answers with"
        value={chosenType}
        onChange={(value) => setResponseType(value as Endpoint['response_type'])}
        options={allowed.map((type) => ({ value: type, label: RESPONSE_TYPE_LABELS[type] }))}
        error={errors.response_type}
      />
      {errors._ && <Notice kind="error">{errors._}</Notice>}
      {allowed.length === 0 && <Notice kind="warning">Choose a dataset, a model, or both.</Notice>}
      <ErrorNotice error={failure} />
      {done && (
        <Notice kind="success" title="Replaced.">
          <ul class="replace-steps">
            {done.steps.map((step) => (
              <li key={step}>{step}</li>
            ))}
          </ul>
        </Notice>
      )}
      <div class="form-actions">
        <SubmitButton busy={busy} busyLabel="Replacing…" disabled={allowed.length === 0}>
          Replace the endpoint
        </SubmitButton>
        <button type="button" class="secondary" onClick={props.onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

/** What a replacement keeps (name, texts, defaults, policies, publication) and what it loses (the usage history). */
function ReplaceWarning(props: { endpoint: Endpoint }) {
  const { endpoint } = props;
  const policies = endpoint.policies?.length ?? 0;
  const marketplaces = endpoint.published_to.length;
  return (
    <Notice kind="warning">
      The endpoint is deleted and made again at the same address (<code>{endpoint.slug}</code>): its name, summary, description, generation
      defaults, {policies} {policies === 1 ? 'policy' : 'policies'} and its publication on {marketplaces}{' '}
      {marketplaces === 1 ? 'marketplace' : 'marketplaces'} are copied. Its usage history is deleted with the old one.
    </Notice>
  );
}

type Choice = { dataset_id: string | null; model_id: string | null; response_type: Endpoint['response_type'] };

/** Creates `old` again under its slug with `choice`, then its policies and its publications; the steps done, in words. */
async function recreate(old: Endpoint, choice: Choice): Promise<{ created: CreatedEndpoint; steps: string[] }> {
  const created = await post<CreatedEndpoint>('/endpoints/', {
    name: old.name,
    slug: old.slug,
    summary: old.summary,
    description: old.description,
    tags: old.tags,
    ...choice,
    // An endpoint that gets its first model gets the answers' defaults a new one would (answer length, in full).
    generation_defaults:
      !old.model && choice.model_id && Object.keys(old.generation_defaults).length === 0
        ? generationDefaults(String(ANSWER_TOKENS), true)
        : old.generation_defaults,
  });
  const steps: string[] = [];
  for (const policy of old.policies) {
    await post('/policies/', {
      name: policy.name,
      policy_type: policy.policy_type,
      endpoint_id: created.id,
      configuration: policy.configuration,
    });
  }
  if (old.policies.length > 0) steps.push(`Policies copied: ${old.policies.map((policy) => policy.name).join(', ')}.`);
  if (old.published_to.length > 0) {
    const answer = await post<PublicationAnswer>(apiPath`/endpoints/${old.slug}/publish`, { marketplace_ids: old.published_to });
    for (const result of answer.results) {
      steps.push(
        result.success
          ? `Published again on ${result.marketplace_name}.`
          : `Not published again on ${result.marketplace_name}: ${result.error ?? 'refused'} (publish it from the Publish tab).`,
      );
    }
  }
  return { created, steps };
}

async function replaceEndpoint(old: Endpoint, choice: Choice): Promise<string[]> {
  await del(apiPath`/endpoints/${old.slug}`);
  try {
    const { steps } = await recreate(old, choice);
    return [`Deleted and made again at ${old.slug}.`, ...steps];
  } catch (error) {
    // The new one was refused (or half made): the old one comes back as it was, and the reason is shown.
    await del(apiPath`/endpoints/${old.slug}`).catch(() => undefined);
    await recreate(old, {
      dataset_id: old.dataset?.id ?? null,
      model_id: old.model?.id ?? null,
      response_type: old.response_type,
    }).catch(() => undefined);
    throw error;
  }
}
