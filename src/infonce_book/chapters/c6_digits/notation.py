"""The symbols Chapter 6 defines, each with its one meaning (as the notation page lists it;
``tests/experiment/test_notation.py`` checks the two agree)."""

SYMBOLS = {
    '\\tau': 'temperature',
    '\\pi': 'data distribution',
    'c_1': 'coefficient of $1/k$ in $L_k - \\log k - L_\\infty$',
    'L_\\infty': 'limit risk',
    '\\hat M_k': 'idealised search over a database of $k$ items',
    '\\hat Q_k': 'softmax search over a database of $k$ items',
    'd_1': 'limit of $k\\,(\\mathbb E H(\\hat M_k, \\hat Q_k) - L_k)$',
    '\\varepsilon_{\\mathrm{eq}}': 'equivalence margin of the "levels off" test',
}
