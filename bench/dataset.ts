/**
 * The benchmark's data set is deterministic, so the load generator can pick a random activated
 * machine from a number alone, without shipping a list of keys between processes.
 */
export const benchProducts = ["bench-alpha", "bench-beta", "bench-gamma"] as const;

export interface DatasetShape {
  licenses: number;
  machines: number;
}

export function licenseKeyFor(index: number): string {
  return `BENCH-${index.toString(36).toUpperCase().padStart(6, "0")}`;
}

export function productFor(index: number): string {
  return benchProducts[index % benchProducts.length] as string;
}

/** Machines are spread evenly: the first `machines % licenses` licenses get one more. */
export function machineCountFor(index: number, shape: DatasetShape): number {
  const base = Math.floor(shape.machines / shape.licenses);
  return base + (index < shape.machines % shape.licenses ? 1 : 0);
}

export function machineIdFor(licenseIndex: number, machineIndex: number): string {
  return `machine-${licenseIndex}-${machineIndex}`;
}

/** Enough headroom for activate/deactivate cycles on top of the seeded machines. */
export function maxMachinesFor(shape: DatasetShape): number {
  return Math.ceil(shape.machines / shape.licenses) + 4;
}

/** A random activated machine: a license with at least one seeded machine, and one of them. */
export function randomActivatedMachine(shape: DatasetShape): {
  licenseKey: string;
  machineId: string;
  productSlug: string;
} {
  const licensesWithMachines = Math.min(shape.licenses, shape.machines);
  const index = Math.floor(Math.random() * licensesWithMachines);
  const machine = Math.floor(Math.random() * machineCountFor(index, shape));
  return {
    licenseKey: licenseKeyFor(index),
    machineId: machineIdFor(index, machine),
    productSlug: productFor(index),
  };
}
