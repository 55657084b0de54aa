/**
 * Weighted, L2-regularised logistic regression by Newton's method: a few features, a few thousand rows,
 * a few iterations. Used to fit the shipped calibration on the evaluation set (scripts/eval/fit.ts) and a
 * dataset's own calibration from its pseudo-questions (self-calibration.ts).
 */

const L2 = 0.01;

/** The weights of each column of `x` (the caller adds a column of ones for the intercept). */
export function fitLogistic(x: readonly (readonly number[])[], y: readonly number[], weightOfPositive = 1, l2 = L2): number[] {
  const size = x[0]?.length ?? 0;
  let w = new Array<number>(size).fill(0);
  for (let iteration = 0; iteration < 50; iteration++) {
    const gradient = w.map((value) => l2 * value);
    const hessian = w.map((_, i) => w.map((__, j) => (i === j ? l2 : 0)));
    for (const [row, features] of x.entries()) {
      const p = 1 / (1 + Math.exp(-features.reduce((sum, value, k) => sum + value * (w[k] as number), 0)));
      const weight = y[row] === 1 ? weightOfPositive : 1;
      addRow(gradient, hessian, features, p, y[row] as number, weight);
    }
    const step = solve(hessian, gradient);
    w = w.map((value, i) => value - (step[i] as number));
    if (Math.max(...step.map(Math.abs)) < 1e-9) break;
  }
  return w;
}

/** Adds one row's part to the gradient and the Hessian of the weighted log loss, at prediction `p`. */
function addRow(gradient: number[], hessian: number[][], features: readonly number[], p: number, target: number, weight: number): void {
  const size = gradient.length;
  for (let i = 0; i < size; i++) {
    gradient[i] = (gradient[i] as number) + weight * (p - target) * (features[i] as number);
    for (let j = 0; j < size; j++) {
      (hessian[i] as number[])[j] =
        ((hessian[i] as number[])[j] as number) + weight * p * (1 - p) * (features[i] as number) * (features[j] as number);
    }
  }
}

/** Gaussian elimination with partial pivoting (the Hessian is small and positive definite). */
function solve(matrix: number[][], vector: number[]): number[] {
  const n = vector.length;
  const a = matrix.map((row, i) => [...row, vector[i] as number]);
  for (let column = 0; column < n; column++) {
    let pivot = column;
    for (let row = column + 1; row < n; row++)
      if (Math.abs(a[row]?.[column] as number) > Math.abs(a[pivot]?.[column] as number)) pivot = row;
    [a[column], a[pivot]] = [a[pivot] as number[], a[column] as number[]];
    for (let row = column + 1; row < n; row++) {
      const factor = (a[row]?.[column] as number) / (a[column]?.[column] as number);
      for (let k = column; k <= n; k++) (a[row] as number[])[k] = (a[row]?.[k] as number) - factor * (a[column]?.[k] as number);
    }
  }
  const result = new Array<number>(n).fill(0);
  for (let row = n - 1; row >= 0; row--) {
    let sum = a[row]?.[n] as number;
    for (let k = row + 1; k < n; k++) sum -= (a[row]?.[k] as number) * (result[k] as number);
    result[row] = sum / (a[row]?.[row] as number);
  }
  return result;
}
