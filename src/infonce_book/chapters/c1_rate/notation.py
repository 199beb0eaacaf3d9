"""The symbols Chapter 1 defines, each with its one meaning (as the notation page lists it;
``tests/experiment/test_notation.py`` checks the two agree)."""

SYMBOLS = {
    '\\tau': 'temperature',
    '\\beta': 'inverse temperature $1/\\tau$',
    '\\pi': 'data distribution',
    '\\kappa': 'concentration of the vMF law',
    '\\phi': 'embedding',
    '\\mu': 'mean weight of a negative given the anchor, $Z_\\phi(x)$',
    'u_1': 'first raw moment of the normalised positive weight $U$',
    'v_2': 'second central moment of the normalised negative weight $V$',
    'c_1': 'coefficient of $1/k$ in $L_k - \\log k - L_\\infty$',
    'L_\\infty': 'limit risk',
    'Z_p': 'normalising function of the vMF law on $S^{p-1}$',
    'A_p': 'mean resultant length of the vMF law on $S^{p-1}$',
    '\\lambda_3': "mixed third moment of two negatives' normalised weights in one NT-Xent row",
    '\\operatorname{cum}_r': '$r$-th cumulant',
    'C(\\tau)': 'uniform constant of the rate $\\lvert L_k - \\log k - L_\\infty\\rvert \\le C(\\tau)/k$',
    '\\gamma_{\\mathrm{NT}}': "covariance of two negatives' normalised weights in one NT-Xent row",
}
