/**
 * Once added a trigger-kept list of active machines to SQLite's license rows. 0009 removes it
 * from databases that have it; a new database never gets it.
 */
export async function up(): Promise<void> {}

export async function down(): Promise<void> {}
