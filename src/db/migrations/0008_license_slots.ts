/**
 * Once moved SQLite's license rows to rowids computed from their keys. 0009 gives rows of
 * databases that ran it rowids of SQLite's choosing again; a new database never ran it.
 */
export async function up(): Promise<void> {}

export async function down(): Promise<void> {}
