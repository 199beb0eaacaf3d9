"""The symbols Chapter 2 defines, each with its one meaning (as the notation page lists it;
``tests/experiment/test_notation.py`` checks the two agree)."""

SYMBOLS = {
    '\\tau': 'temperature',
    '\\beta': 'inverse temperature $1/\\tau$',
    '\\pi': 'data distribution',
    '\\kappa': 'concentration of the vMF law',
    '\\phi': 'embedding',
    '\\mu': 'mean weight of a negative given the anchor, $Z_\\phi(x)$',
    '\\rho': 'correlation of the Gaussian model',
    'u_1': 'first raw moment of the normalised positive weight $U$',
    'L_\\infty': 'limit risk',
    'Z_p': 'normalising function of the vMF law on $S^{p-1}$',
    'A_p': 'mean resultant length of the vMF law on $S^{p-1}$',
    '\\hat M_k': 'idealised search over a database of $k$ items',
    '\\hat Q_k': 'softmax search over a database of $k$ items',
    'd_1': 'limit of $k\\,(\\mathbb E H(\\hat M_k, \\hat Q_k) - L_k)$',
    '\\zeta': '$\\mathbb E[\\mu(x)/W \\mid x]$',
    'B_S': '($k$ times) the self-normalised importance sampling bias constant',
    'C_H': 'uniform constant of $\\lvert\\mathbb E H(\\hat M_k, \\hat Q_k) - L_k\\rvert \\le C_H(\\tau)/k$',
    '\\bar R': 'mean second moment of the density ratio, $1 + \\chi^2(P_{xx^+}\\Vert\\pi\\otimes\\pi)$',
    '\\varepsilon_{\\mathrm{ni}}': ('non-inferiority margin of the test that the idealised search is not worse '
                                   'than the softmax one'),
}
