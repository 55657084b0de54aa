import { Empty, ErrorNotice, Loading, PageHeader } from '../components/ui.tsx';
import { date } from '../lib/format.ts';
import { useFirstRender, useResource, useTitle } from '../lib/hooks.ts';
import { modelTarget } from '../lib/models.ts';
import { typeLabel } from '../lib/types.ts';
import type { Model } from '../views.ts';

export function ModelList() {
  useTitle('Models');
  const models = useResource<Model[]>('/models/');
  return (
    <>
      <PageHeader
        title="Models"
        subtitle="The language models your endpoints answer with."
        actions={
          <a class="button" href="/models/new">
            Add a model
          </a>
        }
      />
      <ErrorNotice error={models.error} />
      {models.loading && <Loading what="models" />}
      {models.data && <Table models={models.data} />}
    </>
  );
}

function Table(props: { models: Model[] }) {
  useFirstRender();
  if (props.models.length === 0) {
    return (
      <Empty>
        <p>No model yet. Connect an OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenAI) or pick a GGUF file.</p>
        <a class="button" href="/models/new">
          Add a model
        </a>
      </Empty>
    );
  }
  return (
    <table class="table">
      <caption class="visually-hidden">Your models</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Type</th>
          <th scope="col">Runs</th>
          <th scope="col">Added</th>
        </tr>
      </thead>
      <tbody>
        {props.models.map((model) => (
          <tr key={model.id}>
            <td>
              <a href={`/models/${model.id}`}>{model.name}</a>
            </td>
            <td>{typeLabel(model.dtype)}</td>
            <td class="path">{modelTarget(model)}</td>
            <td class="nowrap">{date(model.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
