import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { NAME_MAX_LENGTH } from '../../src/http/field-bounds.ts';
import { post } from '../api.ts';
import { FolderPicker } from '../components/folder-picker.tsx';
import { discover, ModelChooser, OLLAMA_URL } from '../components/model-chooser.tsx';
import { errorsUnder, type FormValues, initialValues, SchemaForm, toConfiguration, type WidgetProps } from '../components/schema-form.tsx';
import { ErrorNotice, Loading, Notice, PageHeader, SubmitButton, TextField } from '../components/ui.tsx';
import { baseName } from '../lib/format.ts';
import { useFirstRender, useSubmission, useTitle } from '../lib/hooks.ts';
import { typeLabel, typeNamed, useTypes } from '../lib/types.ts';
import type { DiscoveredModels, Model, TypeInfo } from '../views.ts';

export function ModelNew() {
  useTitle('Add a model');
  const types = useTypes();
  if (types.error) return <ErrorNotice error={types.error} />;
  if (!types.data) return <Loading what="model types" />;
  return <Form kinds={types.data.model} />;
}

/** The name a model gets unless the person gives one: the server's model name, or the file's. */
function suggestedName(values: FormValues): string {
  if (typeof values.model === 'string' && values.model) return values.model;
  if (typeof values.model_path === 'string' && values.model_path) return baseName(values.model_path).replace(/\.gguf$/i, '');
  return '';
}

function Form(props: { kinds: TypeInfo[] }) {
  useFirstRender();
  const { route } = useLocation();
  const [dtype, setDtype] = useState(props.kinds[0]?.type ?? 'openai');
  const schema = typeNamed(props.kinds, dtype)?.configuration_schema ?? {};
  const [values, setValues] = useState<FormValues>(() => initialValues(schema));
  const [name, setName] = useState('');
  const { busy, errors, setErrors, failure, run } = useSubmission();
  const [ollama, setOllama] = useState<DiscoveredModels | undefined>(undefined);

  const choose = (next: string) => {
    setDtype(next);
    setValues(initialValues(typeNamed(props.kinds, next)?.configuration_schema ?? {}));
  };

  // A local Ollama is offered when it answers (a probe: a dead address is an answer too, not an error).
  useEffect(() => {
    if (!props.kinds.some((kind) => kind.type === 'openai')) return;
    discover(OLLAMA_URL)
      .then((found) => found.reachable && setOllama(found))
      .catch(() => undefined);
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    const { configuration, errors: local } = toConfiguration(schema, values);
    if (Object.keys(local).length > 0) {
      setErrors(Object.fromEntries(Object.entries(local).map(([key, message]) => [`configuration.${key}`, message])));
      return;
    }
    await run(async () => {
      const created = await post<Model>('/models/', { name: name || suggestedName(values), dtype, configuration });
      route(`/models/${created.id}`);
    });
  };

  const widgets = {
    model: (widget: WidgetProps) => <ModelChooser {...widget} />,
    model_path: (widget: WidgetProps) => <FolderPicker {...widget} pick="model" />,
  };
  const configurationErrors = errorsUnder(errors, 'configuration');

  return (
    <>
      <PageHeader title="Add a model" subtitle="The language model an endpoint answers with." />
      <form class="card form" onSubmit={submit}>
        <fieldset class="choices">
          <legend>Where the model runs</legend>
          {props.kinds.map((kind) => (
            <label key={kind.type} class={`choice${kind.type === dtype ? ' chosen' : ''}`}>
              <input type="radio" name="dtype" value={kind.type} checked={kind.type === dtype} onChange={() => choose(kind.type)} />
              <span class="choice-title">{typeLabel(kind.type)}</span>
              <span class="choice-text">{kind.description}</span>
            </label>
          ))}
        </fieldset>
        {dtype === 'openai' && ollama && values.base_url !== OLLAMA_URL && (
          <Notice kind="success">
            Ollama is running on this machine with {ollama.models.length} model{ollama.models.length === 1 ? '' : 's'}.{' '}
            <button type="button" class="small" onClick={() => setValues({ ...values, base_url: OLLAMA_URL, api_key: 'ollama' })}>
              Use Ollama
            </button>
          </Notice>
        )}
        <SchemaForm
          schema={schema}
          values={values}
          onChange={setValues}
          errors={configurationErrors}
          widgets={widgets}
          first={['base_url', 'api_key']}
        />
        <TextField
          label="Name"
          maxLength={NAME_MAX_LENGTH}
          hint="How the model is listed here; its model name unless you give another."
          placeholder={suggestedName(values)}
          value={name}
          error={errors.name}
          onInput={setName}
        />
        {configurationErrors._ && <Notice kind="error">{configurationErrors._}</Notice>}
        <ErrorNotice error={failure} />
        <div class="form-actions">
          <SubmitButton busy={busy} busyLabel="Adding…">
            Add the model
          </SubmitButton>
          <a class="button secondary" href="/models">
            Cancel
          </a>
        </div>
      </form>
    </>
  );
}
