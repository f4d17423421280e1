// The tests' own checks.
const assert = require('node:assert');
exports.check = (got, want) => assert.deepStrictEqual(got, want);
