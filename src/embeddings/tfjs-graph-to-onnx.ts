import { type OnnxAttribute, type OnnxElementType, type OnnxModel, type OnnxNode, type OnnxTensor, OnnxType } from './onnx-writer.ts';

/**
 * Converts a TensorFlow.js graph model (model.json's `modelTopology.node` and the weights its
 * `weightsManifest` describes) into an ONNX graph, op by op, so ONNX Runtime computes what tfjs computes.
 *
 * Only the ops USE-lite uses are mapped (listed in CONVERTERS); any other op, or an attribute outside
 * what is handled (an ellipsis in a StridedSlice, a Conv2D that is not 1x1), fails the conversion with
 * its name, and the caller falls back to tfjs. TF's int32 tensors become int64 in ONNX (shapes, indices
 * and axes are int64 there), which changes no value. The output is deterministic: the same files give
 * the same bytes. One job, and long because of it: most of the file is the table of op converters.
 */

export interface TfjsModelJson {
  readonly modelTopology: { readonly node: readonly TfNode[] };
  readonly weightsManifest: readonly { readonly paths: readonly string[]; readonly weights: readonly TfWeightSpec[] }[];
}

interface TfWeightSpec {
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: string;
}

interface TfNode {
  readonly name: string;
  readonly op: string;
  readonly input?: readonly string[];
  readonly attr?: Readonly<Record<string, TfAttr>>;
}

interface TfAttr {
  readonly i?: string | number;
  readonly b?: boolean;
  readonly f?: number;
  readonly s?: string | readonly number[];
  readonly type?: number | string;
  readonly list?: { readonly i?: readonly (string | number)[] };
  readonly shape?: { readonly dim?: readonly { readonly size?: string | number }[] };
}

export interface ConvertOptions {
  /** Stored in the model's metadata (e.g. the hash of the files it was made from). */
  readonly metadata?: Readonly<Record<string, string>>;
  readonly producerVersion: string;
  /** The name of the graph's one output (default `embeddings`). */
  readonly outputName?: string;
  /**
   * `int8`: every matrix product with a constant matrix (the model's dense layers) becomes ONNX Runtime's
   * DynamicQuantizeMatMul (com.microsoft): weights stored as int8 with one scale per output column,
   * activations quantised to uint8 per batch. Smaller and faster; the vectors move slightly.
   */
  readonly quantize?: 'int8';
}

/** Thrown for a graph this converter cannot map; the message names the op or attribute. */
export class UnsupportedGraphError extends Error {
  override readonly name = 'UnsupportedGraphError';
}

/** TF DataType → the ONNX type a tensor of it becomes. */
const TF_TYPES: Readonly<Record<number, OnnxElementType>> = {
  1: OnnxType.FLOAT, // DT_FLOAT
  3: OnnxType.INT64, // DT_INT32, widened
  9: OnnxType.INT64, // DT_INT64
  10: OnnxType.BOOL, // DT_BOOL
};

const INT64_MAX = 9223372036854775807n;

export function convertTfjsGraph(model: TfjsModelJson, weights: Uint8Array, options: ConvertOptions): OnnxModel {
  const converter = new Converter(readWeights(model, weights), options.quantize === 'int8');
  const nodes = topologicalOrder(model.modelTopology.node);
  for (const node of nodes) converter.convert(node);
  const consumed = new Set(nodes.flatMap((node) => (node.input ?? []).map((input) => tensorName(input))));
  const outputs = nodes.filter((node) => node.op !== 'Const' && node.op !== 'Placeholder' && !consumed.has(node.name));
  if (outputs.length !== 1) throw new UnsupportedGraphError(`expected one output, found ${outputs.map((node) => node.name).join(', ')}`);
  const outputName = options.outputName ?? 'embeddings';
  converter.emit('Identity', [(outputs[0] as TfNode).name], { outputs: [outputName] });
  return {
    producer: 'knode tfjs-graph-to-onnx',
    producerVersion: options.producerVersion,
    opsets:
      options.quantize === 'int8'
        ? [
            { domain: '', version: 18 },
            { domain: 'com.microsoft', version: 1 },
          ]
        : [{ domain: '', version: 18 }],
    graphName: 'tfjs_graph',
    nodes: converter.nodes,
    initializers: converter.initializers,
    inputs: converter.inputs,
    outputs: [{ name: outputName, type: OnnxType.FLOAT, dims: ['batch', 'dimension'] }],
    metadata: options.metadata,
  };
}

/** `name:1` → `name:1`, `^name` (a control input) → `name`, `name:0` → `name`. */
function tensorName(input: string): string {
  const plain = input.startsWith('^') ? input.slice(1) : input;
  return plain.endsWith(':0') ? plain.slice(0, -2) : plain;
}

function topologicalOrder(nodes: readonly TfNode[]): TfNode[] {
  const byName = new Map(nodes.map((node) => [node.name, node]));
  const done = new Set<string>();
  const ordered: TfNode[] = [];
  const visit = (node: TfNode, path: Set<string>) => {
    if (done.has(node.name)) return;
    if (path.has(node.name)) throw new UnsupportedGraphError(`the graph has a cycle through ${node.name}`);
    path.add(node.name);
    for (const input of node.input ?? []) {
      const producer = byName.get(tensorName(input).split(':')[0] as string);
      if (!producer) throw new UnsupportedGraphError(`${node.name} reads ${input}, which no node produces`);
      visit(producer, path);
    }
    path.delete(node.name);
    done.add(node.name);
    ordered.push(node);
  };
  for (const node of nodes) visit(node, new Set());
  return ordered;
}

interface ConstantValue {
  readonly type: OnnxElementType;
  readonly dims: readonly number[];
  /** Float32Array for floats, BigInt64Array for integers. */
  readonly data: Float32Array | BigInt64Array;
}

function readWeights(model: TfjsModelJson, bytes: Uint8Array): Map<string, ConstantValue> {
  const values = new Map<string, ConstantValue>();
  let offset = 0;
  for (const group of model.weightsManifest) {
    for (const spec of group.weights) {
      const count = spec.shape.reduce((product, dim) => product * dim, 1);
      const end = offset + count * 4;
      if (end > bytes.byteLength) throw new UnsupportedGraphError(`the weights end before ${spec.name}`);
      values.set(spec.name, decodeWeight(spec, new DataView(bytes.buffer, bytes.byteOffset + offset, count * 4), count));
      offset = end;
    }
  }
  if (offset !== bytes.byteLength)
    throw new UnsupportedGraphError(`the weights hold ${bytes.byteLength - offset} bytes no manifest entry names`);
  return values;
}

/** One weight's little-endian values: float32 as FLOAT, int32 widened to INT64 (ONNX's index type). */
function decodeWeight(spec: TfWeightSpec, view: DataView, count: number): ConstantValue {
  if (spec.dtype === 'float32') {
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = view.getFloat32(i * 4, true);
    return { type: OnnxType.FLOAT, dims: spec.shape, data };
  }
  if (spec.dtype === 'int32') {
    const data = new BigInt64Array(count);
    for (let i = 0; i < count; i++) data[i] = BigInt(view.getInt32(i * 4, true));
    return { type: OnnxType.INT64, dims: spec.shape, data };
  }
  throw new UnsupportedGraphError(`weight ${spec.name} has dtype ${spec.dtype} (only float32 and int32 are mapped)`);
}

function tensorBytes(value: ConstantValue): Uint8Array {
  return new Uint8Array(value.data.buffer, value.data.byteOffset, value.data.byteLength).slice();
}

function int64(values: readonly (number | bigint)[]): BigInt64Array {
  return BigInt64Array.from(values, (value) => BigInt(value));
}

/**
 * One axis of a StridedSlice as ONNX Slice bounds, its masks applied; `shrink` when the axis keeps one element
 * and goes (begin -1 then means the last element, so its end is "to the end").
 */
function stridedAxis(
  nodeName: string,
  axis: number,
  start: number,
  end: number | undefined,
  stride: number,
  masks: { beginMask: number; endMask: number; shrinkMask: number },
): { start: bigint; end: bigint; shrink: boolean } {
  const bit = 1 << axis;
  if (masks.shrinkMask & bit) {
    if (stride !== 1) throw new UnsupportedGraphError(`StridedSlice ${nodeName} shrinks with stride ${stride}`);
    return { start: BigInt(start), end: start === -1 ? INT64_MAX : BigInt(start + 1), shrink: true };
  }
  const open = { start: stride > 0 ? 0n : INT64_MAX, end: stride > 0 ? INT64_MAX : -INT64_MAX };
  return {
    start: masks.beginMask & bit ? open.start : BigInt(start),
    end: masks.endMask & bit ? open.end : BigInt(end ?? 0),
    shrink: false,
  };
}

type Convert = (node: TfNode, c: Converter) => void;

class Converter {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  readonly inputs: { name: string; type: OnnxElementType; dims: (number | string)[] }[] = [];
  /** Constants by tensor name, for ops whose arguments must be known now (axes, permutations, slices). */
  private readonly constants = new Map<string, ConstantValue>();
  /** Ranks known without shape inference (constants, inputs, transposes): enough for BatchMatMul's adjoints. */
  private readonly ranks = new Map<string, number>();
  private readonly written = new Set<string>();
  private helperCount = 0;

  constructor(
    private readonly weights: Map<string, ConstantValue>,
    readonly quantize: boolean,
  ) {}

  convert(node: TfNode): void {
    const convert = CONVERTERS[node.op];
    if (!convert) throw new UnsupportedGraphError(`op ${node.op} (${node.name}) has no ONNX mapping`);
    convert(node, this);
  }

  /** Adds an ONNX node; its outputs are `outputs` or one fresh name. Returns the first output. */
  emit(
    op: string,
    inputs: readonly string[],
    options: { outputs?: string[]; attributes?: Record<string, OnnxAttribute>; domain?: string } = {},
  ): string {
    for (const input of inputs) this.materialise(input);
    const outputs = options.outputs ?? [this.fresh(op)];
    this.nodes.push({ op, inputs, outputs, name: `${outputs[0]}/${op}`, attributes: options.attributes, domain: options.domain });
    return outputs[0] as string;
  }

  /** An initializer holding `data`, under `name` or a fresh one. */
  constant(data: Float32Array | BigInt64Array, dims: readonly number[], name?: string): string {
    const used = this.declare(data, dims, name ?? this.fresh('const'));
    this.materialise(used);
    return used;
  }

  /**
   * A TF Const: known now, written as an initializer only once a node reads it, so a constant that is
   * only folded into another (a Conv2D's filter, reshaped) is not stored twice.
   */
  declare(data: Float32Array | BigInt64Array, dims: readonly number[], name: string): string {
    this.constants.set(name, { type: data instanceof Float32Array ? OnnxType.FLOAT : OnnxType.INT64, dims, data });
    this.ranks.set(name, dims.length);
    return name;
  }

  private materialise(name: string): void {
    const value = this.constants.get(name);
    if (!value || this.written.has(name)) return;
    this.written.add(name);
    this.initializers.push({ name, type: value.type, dims: value.dims, bytes: tensorBytes(value) });
  }

  /** A constant's value, or undefined when `input` is computed. */
  constantValue(input: string): ConstantValue | undefined {
    return this.constants.get(tensorName(input));
  }

  /** An initializer of raw bytes (int8 weights), under a fresh name. */
  rawConstant(type: OnnxElementType, dims: readonly number[], bytes: Uint8Array): string {
    const name = this.fresh('const');
    this.initializers.push({ name, type, dims, bytes });
    this.ranks.set(name, dims.length);
    return name;
  }

  weight(name: string): ConstantValue {
    const value = this.weights.get(name);
    if (!value) throw new UnsupportedGraphError(`Const ${name} has no weights in the manifest`);
    return value;
  }

  input(name: string, type: OnnxElementType, dims: (number | string)[]): void {
    this.inputs.push({ name, type, dims });
    this.ranks.set(name, dims.length);
  }

  /** The value of a constant input, as integers (axes, shapes, permutations). */
  ints(input: string | undefined, what: string): number[] {
    const value = input === undefined ? undefined : this.constants.get(tensorName(input));
    if (!value) throw new UnsupportedGraphError(`${what} must be a constant`);
    return Array.from(value.data as ArrayLike<number | bigint>, (element) => Number(element));
  }

  rank(input: string): number | undefined {
    return this.ranks.get(tensorName(input));
  }

  setRank(name: string, rank: number): void {
    this.ranks.set(name, rank);
  }

  private fresh(what: string): string {
    this.helperCount++;
    return `onnx/${what}_${this.helperCount}`;
  }
}

function inputs(node: TfNode, count?: number): string[] {
  const all = (node.input ?? []).filter((input) => !input.startsWith('^')).map(tensorName);
  if (count !== undefined && all.length !== count) {
    throw new UnsupportedGraphError(`${node.op} ${node.name} has ${all.length} inputs, expected ${count}`);
  }
  return all;
}

function attrInt(node: TfNode, key: string, fallback?: number): number {
  const value = node.attr?.[key]?.i;
  if (value === undefined) {
    if (fallback !== undefined) return fallback;
    throw new UnsupportedGraphError(`${node.op} ${node.name} has no attribute ${key}`);
  }
  return Number(value);
}

function attrBool(node: TfNode, key: string): boolean {
  return node.attr?.[key]?.b === true;
}

function attrString(node: TfNode, key: string): string | undefined {
  const value = node.attr?.[key]?.s;
  if (value === undefined) return undefined;
  if (typeof value === 'string') return Buffer.from(value, 'base64').toString('latin1');
  return String.fromCharCode(...value);
}

function attrType(node: TfNode, key: string): OnnxElementType {
  const raw = node.attr?.[key]?.type;
  const type = TF_TYPES[Number(raw)];
  if (type === undefined) throw new UnsupportedGraphError(`${node.op} ${node.name}: TF dtype ${String(raw)} has no ONNX mapping`);
  return type;
}

function attrInts(node: TfNode, key: string): number[] {
  return (node.attr?.[key]?.list?.i ?? []).map(Number);
}

/** The ONNX node takes the TF node's inputs and gives its output under the TF name. */
function direct(op: string, arity: number): Convert {
  return (node, c) => {
    c.emit(op, inputs(node, arity), { outputs: [node.name] });
  };
}

/** TF reductions take their axes as a tensor; so does ONNX from opset 18. */
function reduction(op: string): Convert {
  return (node, c) => {
    const [x, axes] = inputs(node, 2) as [string, string];
    const axesValues = c.ints(axes, `${node.op} ${node.name}'s axes`);
    c.emit(op, [x, c.constant(int64(axesValues), [axesValues.length])], {
      outputs: [node.name],
      attributes: { keepdims: { kind: 'int', value: attrBool(node, 'keep_dims') ? 1 : 0 } },
    });
  };
}

const CONVERTERS: Readonly<Record<string, Convert>> = {
  Const(node, c) {
    const value = c.weight(node.name);
    c.declare(value.data, value.dims, node.name);
  },
  Placeholder(node, c) {
    const dims = (node.attr?.shape?.shape?.dim ?? []).map((dim, index) => {
      const size = Number(dim.size ?? -1);
      return size >= 0 ? size : `${node.name}_${index}`;
    });
    c.input(node.name, attrType(node, 'dtype'), dims);
  },
  Identity: direct('Identity', 1),
  Add: direct('Add', 2),
  AddV2: direct('Add', 2),
  Sub: direct('Sub', 2),
  Mul: direct('Mul', 2),
  RealDiv: direct('Div', 2),
  Maximum: direct('Max', 2),
  Less: direct('Less', 2),
  Greater: direct('Greater', 2),
  LogicalNot: direct('Not', 1),
  Sin: direct('Sin', 1),
  Cos: direct('Cos', 1),
  Tanh: direct('Tanh', 1),
  Relu: direct('Relu', 1),
  Shape: direct('Shape', 1),
  Reshape: direct('Reshape', 2),
  GatherNd: direct('GatherND', 2),
  Range: direct('Range', 3),
  Sum: reduction('ReduceSum'),
  Mean: reduction('ReduceMean'),
  Max: reduction('ReduceMax'),
  Prod: reduction('ReduceProd'),
  Square(node, c) {
    const [x] = inputs(node, 1) as [string];
    c.emit('Mul', [x, x], { outputs: [node.name] });
  },
  Rsqrt(node, c) {
    const [x] = inputs(node, 1) as [string];
    c.emit('Reciprocal', [c.emit('Sqrt', [x])], { outputs: [node.name] });
  },
  Softmax(node, c) {
    c.emit('Softmax', inputs(node, 1), { outputs: [node.name], attributes: { axis: { kind: 'int', value: -1 } } });
  },
  BiasAdd(node, c) {
    const format = attrString(node, 'data_format') ?? 'NHWC';
    if (format !== 'NHWC') throw new UnsupportedGraphError(`BiasAdd ${node.name} has data_format ${format}`);
    c.emit('Add', inputs(node, 2), { outputs: [node.name] });
  },
  Cast(node, c) {
    c.emit('Cast', inputs(node, 1), { outputs: [node.name], attributes: { to: { kind: 'int', value: attrType(node, 'DstT') } } });
  },
  Where(node, c) {
    // TF: the coordinates of true elements, one row each ([n, rank]); ONNX NonZero gives [rank, n].
    const [condition] = inputs(node, 1) as [string];
    c.emit('Transpose', [c.emit('NonZero', [condition])], {
      outputs: [node.name],
      attributes: { perm: { kind: 'ints', value: [1, 0] } },
    });
  },
  GatherV2(node, c) {
    const [params, indices, axis] = inputs(node, 3) as [string, string, string];
    if (attrInt(node, 'batch_dims', 0) !== 0) throw new UnsupportedGraphError(`GatherV2 ${node.name} has batch_dims`);
    const [axisValue] = c.ints(axis, `GatherV2 ${node.name}'s axis`);
    c.emit('Gather', [params, indices], { outputs: [node.name], attributes: { axis: { kind: 'int', value: axisValue ?? 0 } } });
  },
  ConcatV2(node, c) {
    const all = inputs(node);
    const values = all.slice(0, -1);
    const [axis] = c.ints(all.at(-1), `ConcatV2 ${node.name}'s axis`);
    c.emit('Concat', values, { outputs: [node.name], attributes: { axis: { kind: 'int', value: axis ?? 0 } } });
  },
  ExpandDims(node, c) {
    const [x, dim] = inputs(node, 2) as [string, string];
    const axes = c.ints(dim, `ExpandDims ${node.name}'s dim`);
    c.emit('Unsqueeze', [x, c.constant(int64(axes), [axes.length])], { outputs: [node.name] });
    const rank = c.rank(x);
    if (rank !== undefined) c.setRank(node.name, rank + 1);
  },
  Squeeze(node, c) {
    const [x] = inputs(node, 1) as [string];
    const axes = attrInts(node, 'squeeze_dims');
    const args = axes.length > 0 ? [x, c.constant(int64(axes), [axes.length])] : [x];
    c.emit('Squeeze', args, { outputs: [node.name] });
  },
  Transpose(node, c) {
    const [x, perm] = inputs(node, 2) as [string, string];
    const permutation = c.ints(perm, `Transpose ${node.name}'s perm`);
    c.emit('Transpose', [x], { outputs: [node.name], attributes: { perm: { kind: 'ints', value: permutation } } });
    c.setRank(node.name, permutation.length);
  },
  Pack(node, c) {
    // Stack N tensors along a new axis: each gains that axis, then they are concatenated along it.
    const axis = attrInt(node, 'axis', 0);
    const axes = c.constant(int64([axis]), [1]);
    const expanded = inputs(node).map((value) => c.emit('Unsqueeze', [value, axes]));
    c.emit('Concat', expanded, { outputs: [node.name], attributes: { axis: { kind: 'int', value: axis } } });
  },
  SplitV(node, c) {
    const [x, sizes, axis] = inputs(node, 3) as [string, string, string];
    const splits = c.ints(sizes, `SplitV ${node.name}'s size_splits`);
    if (splits.some((size) => size < 0)) throw new UnsupportedGraphError(`SplitV ${node.name} has an inferred size`);
    const [axisValue] = c.ints(axis, `SplitV ${node.name}'s axis`);
    const outputs = splits.map((_, index) => (index === 0 ? node.name : `${node.name}:${index}`));
    c.emit('Split', [x, c.constant(int64(splits), [splits.length])], {
      outputs,
      attributes: { axis: { kind: 'int', value: axisValue ?? 0 } },
    });
  },
  Slice(node, c) {
    const [x, begin, size] = inputs(node, 3) as [string, string, string];
    const starts = c.ints(begin, `Slice ${node.name}'s begin`);
    const sizes = c.ints(size, `Slice ${node.name}'s size`);
    const ends = starts.map((start, index) => ((sizes[index] ?? -1) < 0 ? INT64_MAX : BigInt(start + (sizes[index] ?? 0))));
    c.emit(
      'Slice',
      [
        x,
        c.constant(int64(starts), [starts.length]),
        c.constant(int64(ends), [ends.length]),
        c.constant(int64(starts.map((_, i) => i)), [starts.length]),
      ],
      { outputs: [node.name] },
    );
  },
  StridedSlice(node, c) {
    const [x, beginInput, endInput, stridesInput] = inputs(node, 4) as [string, string, string, string];
    if (attrInt(node, 'ellipsis_mask', 0) !== 0 || attrInt(node, 'new_axis_mask', 0) !== 0) {
      throw new UnsupportedGraphError(`StridedSlice ${node.name} uses an ellipsis or new axis`);
    }
    const begin = c.ints(beginInput, `StridedSlice ${node.name}'s begin`);
    const end = c.ints(endInput, `StridedSlice ${node.name}'s end`);
    const strides = c.ints(stridesInput, `StridedSlice ${node.name}'s strides`);
    const beginMask = attrInt(node, 'begin_mask', 0);
    const endMask = attrInt(node, 'end_mask', 0);
    const shrinkMask = attrInt(node, 'shrink_axis_mask', 0);
    const starts: bigint[] = [];
    const ends: bigint[] = [];
    const shrunk: number[] = [];
    begin.forEach((start, axis) => {
      const bounds = stridedAxis(node.name, axis, start, end[axis], strides[axis] ?? 1, { beginMask, endMask, shrinkMask });
      starts.push(bounds.start);
      ends.push(bounds.end);
      if (bounds.shrink) shrunk.push(axis);
    });
    const axes = begin.map((_, axis) => axis);
    const sliced = c.emit('Slice', [
      x,
      c.constant(int64(starts), [starts.length]),
      c.constant(int64(ends), [ends.length]),
      c.constant(int64(axes), [axes.length]),
      c.constant(int64(strides), [strides.length]),
    ]);
    if (shrunk.length === 0) c.emit('Identity', [sliced], { outputs: [node.name] });
    else c.emit('Squeeze', [sliced, c.constant(int64(shrunk), [shrunk.length])], { outputs: [node.name] });
  },
  SparseToDense(node, c) {
    // A dense tensor of the default value with the listed elements set.
    const [indices, shape, values, fallback] = inputs(node, 4) as [string, string, string, string];
    const dense = c.emit('Expand', [fallback, shape]);
    c.emit('ScatterND', [dense, indices, values], { outputs: [node.name] });
  },
  ScatterNd(node, c) {
    // TF adds the updates of repeated indices into zeros; so does ScatterND with reduction add.
    const [indices, updates, shape] = inputs(node, 3) as [string, string, string];
    const type = attrType(node, 'T');
    const zero = type === OnnxType.FLOAT ? new Float32Array(1) : new BigInt64Array(1);
    const zeros = c.emit('ConstantOfShape', [shape], {
      attributes: { value: { kind: 'tensor', value: { name: 'zero', type, dims: [1], bytes: new Uint8Array(zero.buffer) } } },
    });
    c.emit('ScatterND', [zeros, indices, updates], {
      outputs: [node.name],
      attributes: { reduction: { kind: 'string', value: 'add' } },
    });
  },
  Conv2D(node, c) {
    // A 1x1 convolution with stride 1 is a matrix product over the channel axis (NHWC: the last one).
    const [x, filter] = inputs(node, 2) as [string, string];
    const weights = c.weight(filter);
    const [height, width, inChannels, outChannels] = weights.dims;
    const strides = attrInts(node, 'strides');
    const dilations = attrInts(node, 'dilations');
    const format = attrString(node, 'data_format') ?? 'NHWC';
    if (height !== 1 || width !== 1 || format !== 'NHWC' || strides.some((s) => s !== 1) || dilations.some((d) => d !== 1)) {
      throw new UnsupportedGraphError(`Conv2D ${node.name} is not a 1x1 NHWC convolution with stride 1`);
    }
    const matrix = { ...weights, dims: [inChannels as number, outChannels as number] };
    if (c.quantize) return quantizedMatMul(c, x, matrix, node.name);
    const kernel = c.constant(weights.data, matrix.dims, `${filter}/as_matrix`);
    c.emit('MatMul', [x, kernel], { outputs: [node.name] });
  },
  MatMul(node, c) {
    let [a, b] = inputs(node, 2) as [string, string];
    if (attrBool(node, 'transpose_a')) a = c.emit('Transpose', [a], { attributes: { perm: { kind: 'ints', value: [1, 0] } } });
    const constant = c.constantValue(b);
    if (c.quantize && constant && !attrBool(node, 'transpose_b')) return quantizedMatMul(c, a, constant, node.name);
    if (attrBool(node, 'transpose_b')) b = c.emit('Transpose', [b], { attributes: { perm: { kind: 'ints', value: [1, 0] } } });
    c.emit('MatMul', [a, b], { outputs: [node.name] });
  },
  BatchMatMul(node, c) {
    const [x, y] = inputs(node, 2) as [string, string];
    const swapLastTwo = (value: string): string => {
      const rank = c.rank(value);
      if (rank === undefined || rank < 2) throw new UnsupportedGraphError(`BatchMatMul ${node.name}: the rank of ${value} is not known`);
      const perm = Array.from({ length: rank }, (_, i) => i);
      [perm[rank - 2], perm[rank - 1]] = [rank - 1, rank - 2];
      return c.emit('Transpose', [value], { attributes: { perm: { kind: 'ints', value: perm } } });
    };
    const left = attrBool(node, 'adj_x') ? swapLastTwo(x) : x;
    const right = attrBool(node, 'adj_y') ? swapLastTwo(y) : y;
    c.emit('MatMul', [left, right], { outputs: [node.name] });
  },
};

CONVERTERS satisfies Record<string, Convert>;

/**
 * x · matrix with the matrix as int8, symmetric per output column (scale = the column's largest
 * magnitude / 127, zero point 0), through ONNX Runtime's DynamicQuantizeMatMul.
 */
function quantizedMatMul(c: Converter, x: string, matrix: ConstantValue, output: string): void {
  const [rows, columns] = matrix.dims as [number, number];
  if (matrix.dims.length !== 2 || !(matrix.data instanceof Float32Array)) {
    throw new UnsupportedGraphError(`${output}: only a float matrix can be quantised`);
  }
  const data = matrix.data;
  const scales = new Float32Array(columns);
  for (let column = 0; column < columns; column++) {
    let largest = 0;
    for (let row = 0; row < rows; row++) largest = Math.max(largest, Math.abs(data[row * columns + column] as number));
    scales[column] = largest > 0 ? largest / 127 : 1;
  }
  const quantized = new Int8Array(rows * columns);
  for (let row = 0; row < rows; row++) {
    for (let column = 0; column < columns; column++) {
      const value = Math.round((data[row * columns + column] as number) / (scales[column] as number));
      quantized[row * columns + column] = Math.max(-127, Math.min(127, value));
    }
  }
  const weights = c.rawConstant(OnnxType.INT8, [rows, columns], new Uint8Array(quantized.buffer));
  const scale = c.constant(scales, [columns]);
  const zeroPoints = c.rawConstant(OnnxType.INT8, [columns], new Uint8Array(columns));
  c.emit('DynamicQuantizeMatMul', [x, weights, scale, zeroPoints], { outputs: [output], domain: 'com.microsoft' });
}

/** Op types `convertTfjsGraph` maps (for tests and error messages). */
export const MAPPED_OPS: readonly string[] = Object.keys(CONVERTERS).sort();
