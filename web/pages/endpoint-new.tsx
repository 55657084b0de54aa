import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import {
  MAX_TOKENS_MAX,
  NAME_MAX_LENGTH,
  SHORT_TEXT_MAX_LENGTH,
  SLUG_MAX_LENGTH,
  SLUG_MIN_LENGTH,
  SPEC_MAX_TOKENS,
} from '../../src/http/field-bounds.ts';
import { post } from '../api.ts';
import { CheckboxField, ErrorNotice, Loading, Notice, PageHeader, SelectField, SubmitButton, TextField } from '../components/ui.tsx';
import { ANSWER_TOKENS, allowedTypes, generationDefaults, RESPONSE_TYPE_LABELS } from '../lib/endpoints.ts';
import { slugify } from '../lib/format.ts';
import { useFirstRender, useResource, useSubmission, useTitle } from '../lib/hooks.ts';
import type { CreatedEndpoint, Dataset, Model, ResponseType } from '../views.ts';

export function EndpointNew() {
  useTitle('Make an endpoint');
  const datasets = useResource<Dataset[]>('/datasets/');
  const models = useResource<Model[]>('/models/');
  const error = datasets.error ?? models.error;
  if (error) return <ErrorNotice error={error} />;
  if (!datasets.data || !models.data) return <Loading />;
  return <Form datasets={datasets.data} models={models.data} />;
}

function Form(props: { datasets: Dataset[]; models: Model[] }) {
  useFirstRender();
  const { route } = useLocation();
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const [slugTouched, setSlugTouched] = useState(false);
  const [summary, setSummary] = useState('');
  const [datasetId, setDatasetId] = useState(props.datasets[0]?.id ?? '');
  const [modelId, setModelId] = useState(props.models[0]?.id ?? '');
  const [responseType, setResponseType] = useState<ResponseType>('both');
  const [fullAnswers, setFullAnswers] = useState(true);
  const [maxTokens, setMaxTokens] = useState(String(ANSWER_TOKENS));
  const { busy, errors, failure, run } = useSubmission();

  const allowed = allowedTypes(datasetId, modelId);
  const chosenType = allowed.includes(responseType) ? responseType : (allowed[0] ?? 'both');

  const submit = async (event: Event) => {
    event.preventDefault();
    await run(async () => {
      const created = await post<CreatedEndpoint>('/endpoints/', {
        name,
        slug: slug || slugify(name),
        summary,
        dataset_id: datasetId || null,
        model_id: modelId || null,
        response_type: chosenType,
        ...(modelId ? { generation_defaults: generationDefaults(maxTokens, fullAnswers) } : {}),
      });
      route(`/endpoints/${created.slug}`);
    });
  };

  return (
    <>
      <PageHeader title="Make an endpoint" subtitle="Choose what it searches and what answers; policies come next." />
      <form class="card form" onSubmit={submit}>
        <TextField
          label="Name"
          required
          maxLength={NAME_MAX_LENGTH}
          value={name}
          error={errors.name}
          onInput={(value) => {
            setName(value);
            if (!slugTouched) setSlug(slugify(value));
          }}
        />
        <TextField
          label="Slug"
          required
          minLength={SLUG_MIN_LENGTH}
          maxLength={SLUG_MAX_LENGTH}
          hint="Its address: /api/v1/endpoints/<slug>/query. Lower-case letters, digits and hyphens; at most 63 to publish on SyftHub."
          value={slug}
          error={errors.slug}
          onInput={(value) => {
            setSlug(value);
            setSlugTouched(true);
          }}
        />
        <TextField
          label="Summary"
          hint="One line, shown on the marketplace."
          maxLength={SHORT_TEXT_MAX_LENGTH}
          value={summary}
          error={errors.summary}
          onInput={setSummary}
        />
        <SelectField
          label="Dataset"
          value={datasetId}
          onChange={setDatasetId}
          error={errors.dataset_id}
          options={[{ value: '', label: 'None' }, ...props.datasets.map((dataset) => ({ value: dataset.id, label: dataset.name }))]}
          hint={
            props.datasets.length === 0 ? 'No dataset yet: add a folder first to answer from documents.' : 'What the endpoint searches.'
          }
        />
        <SelectField
          label="Model"
          value={modelId}
          onChange={setModelId}
          error={errors.model_id}
          options={[{ value: '', label: 'None' }, ...props.models.map((model) => ({ value: model.id, label: model.name }))]}
          hint={props.models.length === 0 ? 'No model yet: add one to answer in words.' : 'What writes the answer.'}
        />
        <fieldset class="choices">
          <legend>It answers with</legend>
          {(['both', 'summary', 'raw'] as const).map((type) => (
            <label key={type} class={`choice${type === chosenType ? ' chosen' : ''}${allowed.includes(type) ? '' : ' disabled'}`}>
              <input
                type="radio"
                name="response_type"
                value={type}
                checked={type === chosenType}
                disabled={!allowed.includes(type)}
                onChange={() => setResponseType(type)}
              />
              <span class="choice-title">{RESPONSE_TYPE_LABELS[type]}</span>
              <span class="choice-text">
                {type === 'both'
                  ? 'The model answers from the passages it found, which come with the answer.'
                  : type === 'summary'
                    ? 'The model answers (from the passages found, if there is a dataset).'
                    : 'The passages found, with their scores: no model.'}
              </span>
            </label>
          ))}
        </fieldset>
        {errors._ && <Notice kind="error">{errors._}</Notice>}
        {modelId && (
          <GenerationFields
            maxTokens={maxTokens}
            setMaxTokens={setMaxTokens}
            fullAnswers={fullAnswers}
            setFullAnswers={setFullAnswers}
            errors={errors}
          />
        )}
        {allowed.length === 0 && <Notice kind="warning">Choose a dataset, a model, or both.</Notice>}
        <ErrorNotice error={failure} />
        <div class="form-actions">
          <SubmitButton busy={busy} busyLabel="Creating…" disabled={allowed.length === 0}>
            Create the endpoint
          </SubmitButton>
          <a class="button secondary" href="/endpoints">
            Cancel
          </a>
        </div>
      </form>
    </>
  );
}

/** The generation defaults of a new (or replacing) endpoint, shown with what they mean. */
function GenerationFields(props: {
  maxTokens: string;
  setMaxTokens: (value: string) => void;
  fullAnswers: boolean;
  setFullAnswers: (value: boolean) => void;
  errors: Record<string, string>;
}) {
  return (
    <fieldset data-generation-defaults>
      <legend>Answers</legend>
      <TextField
        label="Answer length (max tokens)"
        type="number"
        min={1}
        max={MAX_TOKENS_MAX}
        step={1}
        placeholder={String(SPEC_MAX_TOKENS)}
        hint={`At most this many tokens (a token is about ¾ of a word): ${ANSWER_TOKENS} lets a model answer in full; empty, a query gets the specification's ${SPEC_MAX_TOKENS} (about 75 words). A query can ask for another length.`}
        value={props.maxTokens}
        onInput={props.setMaxTokens}
        error={props.errors['generation_defaults.max_tokens']}
      />
      <CheckboxField
        label="Answer in full (no stop at the first line break)"
        hint="Queries that name no stop sequences get none; the specification's default stops at the first new line, and SyftHub's clients send none."
        checked={props.fullAnswers}
        onChange={props.setFullAnswers}
      />
    </fieldset>
  );
}
