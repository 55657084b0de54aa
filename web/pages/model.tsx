import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { MODEL_TEST_MAX_TOKENS, MODEL_TEST_MAX_TOKENS_MAX, MODEL_TEST_PROMPT } from '../../src/http/field-bounds.ts';
import { apiPath, del, get, patch, post } from '../api.ts';
import { FolderPicker } from '../components/folder-picker.tsx';
import { ModelChooser } from '../components/model-chooser.tsx';
import { errorsUnder, type FormValues, initialValues, SchemaForm, toConfiguration, type WidgetProps } from '../components/schema-form.tsx';
import { Badge, ErrorNotice, Loading, Notice, PageHeader, SubmitButton, TextField } from '../components/ui.tsx';
import { money } from '../lib/format.ts';
import { useFirstRender, useResource, useSubmission, useTitle } from '../lib/hooks.ts';
import { modelTarget } from '../lib/models.ts';
import { typeLabel, typeNamed, useTypes } from '../lib/types.ts';
import type { Model, ModelAnswer, ModelHealth } from '../views.ts';

export function ModelPage(props: { id: string }) {
  const model = useResource<Model>(apiPath`/models/${props.id}`);
  useTitle(model.data?.name ?? 'Model');
  if (model.error && !model.data) return <ErrorNotice error={model.error} />;
  if (!model.data) return <Loading what="the model" />;
  return <View model={model.data} reload={model.reload} />;
}

function View(props: { model: Model; reload: () => Promise<void> }) {
  useFirstRender();
  const { model } = props;
  const { route } = useLocation();
  const [editing, setEditing] = useState(false);
  const [failure, setFailure] = useState<Error | undefined>(undefined);

  const remove = async () => {
    if (!confirm(`Delete the model '${model.name}'?`)) return;
    try {
      await del(apiPath`/models/${model.id}`);
      route('/models');
    } catch (error) {
      setFailure(error as Error);
    }
  };

  return (
    <>
      <PageHeader
        title={model.name}
        subtitle={`${typeLabel(model.dtype)} · ${modelTarget(model)}`}
        actions={
          <>
            <button type="button" class="secondary" aria-expanded={editing} onClick={() => setEditing(!editing)}>
              {editing ? 'Close the editor' : 'Edit'}
            </button>
            <button type="button" class="danger" onClick={remove}>
              Delete
            </button>
          </>
        }
      />
      <ErrorNotice error={failure} />
      {editing && (
        <Editor
          model={model}
          onSaved={async () => {
            setEditing(false);
            await props.reload();
          }}
        />
      )}
      <div class="columns">
        <HealthCard model={model} />
        <TestCard model={model} />
      </div>
      <section class="card" aria-labelledby="model-config-title">
        <h2 id="model-config-title">Configuration</h2>
        <dl class="facts">
          {Object.entries(model.configuration).map(([key, value]) => (
            <div key={key}>
              <dt>{key}</dt>
              <dd>{typeof value === 'object' ? JSON.stringify(value) : String(value)}</dd>
            </div>
          ))}
        </dl>
      </section>
    </>
  );
}

function HealthCard(props: { model: Model }) {
  const [health, setHealth] = useState<ModelHealth | undefined>(undefined);
  const [checking, setChecking] = useState(false);
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  const check = async () => {
    setChecking(true);
    setFailure(undefined);
    try {
      setHealth(await get<ModelHealth>(apiPath`/models/${props.model.id}/health`));
    } catch (error) {
      setFailure(error as Error);
    } finally {
      setChecking(false);
    }
  };
  useEffect(() => {
    void check();
  }, [props.model.id, props.model.updated_at]);
  return (
    <section class="card" aria-labelledby="health-title">
      <h2 id="health-title">Health</h2>
      <div aria-live="polite">
        {checking && !health && <p>Checking…</p>}
        {health && (
          <p>
            <Badge tone={health.healthy ? 'good' : 'bad'}>{health.healthy ? 'healthy' : 'unhealthy'}</Badge> {health.message}
          </p>
        )}
      </div>
      <ErrorNotice error={failure} />
      <button type="button" class="secondary" disabled={checking} onClick={check}>
        {checking ? 'Checking…' : 'Check again'}
      </button>
    </section>
  );
}

function TestCard(props: { model: Model }) {
  const [prompt, setPrompt] = useState(MODEL_TEST_PROMPT);
  const [maxTokens, setMaxTokens] = useState(String(MODEL_TEST_MAX_TOKENS));
  const [answer, setAnswer] = useState<{ result: ModelAnswer; ms: number } | undefined>(undefined);
  const submission = useSubmission();
  const { busy, errors, failure } = submission;
  const run = (event: Event) => {
    event.preventDefault();
    const started = performance.now();
    void submission.run(async () => {
      const result = await post<ModelAnswer>(apiPath`/models/${props.model.id}/test`, {
        prompt,
        max_tokens: Number(maxTokens) || MODEL_TEST_MAX_TOKENS,
      });
      setAnswer({ result, ms: performance.now() - started });
    });
  };

  return (
    <section class="card" aria-labelledby="test-title">
      <h2 id="test-title">Test prompt</h2>
      <form onSubmit={run}>
        <TextField label="Prompt" multiline rows={2} required value={prompt} onInput={setPrompt} error={errors.prompt} />
        <TextField
          label="Max tokens"
          type="number"
          min={1}
          max={MODEL_TEST_MAX_TOKENS_MAX}
          value={maxTokens}
          onInput={setMaxTokens}
          error={errors.max_tokens}
        />
        <SubmitButton busy={busy} busyLabel="Generating…">
          Run the prompt
        </SubmitButton>
      </form>
      <ErrorNotice error={failure} />
      {answer && (
        <div class="answer" aria-live="polite">
          <p class="answer-text">{answer.result.message.content}</p>
          <p class="hint">
            {answer.result.usage.prompt_tokens} prompt + {answer.result.usage.completion_tokens} completion tokens · finish{' '}
            {answer.result.finish_reason} · cost {money(answer.result.cost)} · {Math.round(answer.ms)} ms
          </p>
        </div>
      )}
    </section>
  );
}

function Editor(props: { model: Model; onSaved: () => Promise<void> }) {
  const types = useTypes();
  const schema = typeNamed(types.data?.model, props.model.dtype)?.configuration_schema;
  const [name, setName] = useState(props.model.name);
  const [values, setValues] = useState<FormValues | undefined>(undefined);
  const { busy, errors, setErrors, failure, run } = useSubmission();

  useEffect(() => {
    if (schema) setValues(initialValues(schema, props.model.configuration));
  }, [schema]);
  if (!schema || !values) return <Loading what="the editor" />;

  const save = async (event: Event) => {
    event.preventDefault();
    const { configuration, errors: local } = toConfiguration(schema, values, props.model.configuration);
    if (Object.keys(local).length > 0) {
      setErrors(Object.fromEntries(Object.entries(local).map(([key, message]) => [`configuration.${key}`, message])));
      return;
    }
    await run(async () => {
      await patch(apiPath`/models/${props.model.id}`, { name, configuration });
      await props.onSaved();
    });
  };
  const widgets = {
    model: (widget: WidgetProps) => <ModelChooser {...widget} />,
    model_path: (widget: WidgetProps) => <FolderPicker {...widget} pick="model" />,
  };
  const configurationErrors = errorsUnder(errors, 'configuration');
  return (
    <form class="card form" onSubmit={save} aria-label="Edit the model">
      <TextField label="Name" required value={name} onInput={setName} error={errors.name} />
      <SchemaForm
        schema={schema}
        values={values}
        onChange={setValues}
        errors={configurationErrors}
        widgets={widgets}
        first={['base_url', 'api_key']}
      />
      {configurationErrors._ && <Notice kind="error">{configurationErrors._}</Notice>}
      <ErrorNotice error={failure} />
      <div class="form-actions">
        <SubmitButton busy={busy} busyLabel="Saving…">
          Save
        </SubmitButton>
      </div>
    </form>
  );
}
