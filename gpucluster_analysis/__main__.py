from gpucluster_analysis.cli import main

main()
