"""The symbols Chapter 4 defines, each with its one meaning (as the notation page lists it;
``tests/experiment/test_notation.py`` checks the two agree)."""

SYMBOLS = {
    '\\tau': 'temperature',
    '\\beta': 'inverse temperature $1/\\tau$',
    '\\pi': 'data distribution',
    '\\kappa': 'concentration of the vMF law',
    '\\kappa_d': 'concentration of the vMF law on $S^{d-1}$ that holds the alignment $A_d(\\kappa_d)$ fixed',
    '\\phi': 'embedding',
    '\\mu': 'mean weight of a negative given the anchor, $Z_\\phi(x)$',
    '\\rho': 'correlation of the Gaussian model',
    'A_d': 'mean resultant length of the vMF law on $S^{d-1}$ (the $A_p$ of the reference models with $p = d$)',
    '\\Theta': 'parameter set',
    '\\theta_0': 'centre of the parameter set',
    'L(x)': 'parameter-Lipschitz function of the embedding',
    '\\Lambda_\\star': 'Lipschitz constant of the loss from the embeddings',
    'p_{\\max}': 'largest softmax weight a negative can have',
    'q_{\\max}': 'largest softmax weight of a negative in the decoupled variant',
    '\\omega_k': '$\\min(1, kp_{\\max})$',
    '\\hat R_n': 'empirical Rademacher complexity of the loss class',
    '\\bar\\Lambda_n': 'root mean square of a Lipschitz constant over the sample',
    '\\gamma': 'parameter of the Donsker–Varadhan family of continuity bounds',
}
