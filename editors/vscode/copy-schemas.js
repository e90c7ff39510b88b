// Copies the published entry and hub JSON Schemas into the extension, for contributes.yamlValidation.
const fs = require("fs");
const path = require("path");

const from = path.join(__dirname, "..", "..", "schema");
const to = path.join(__dirname, "schemas");
fs.mkdirSync(to, { recursive: true });
for (const name of ["entry.schema.json", "hub.schema.json"]) {
  fs.copyFileSync(path.join(from, name), path.join(to, name));
}
