/* The program of the dev environment's `mpioperator/mpi-pi:openmpi` image (the MPI operator's pi
 * example, written anew): every rank integrates 4/(1+x^2) over its share of [0,1] with the midpoint
 * rule, rank 0 sums the shares and prints the result. Its output has the example's lines: the number
 * of workers, one line per rank with its host, and "pi is approximately ...". */
#include <math.h>
#include <mpi.h>
#include <stdio.h>

#define INTERVALS 50000000L

int main(int argc, char **argv) {
    int rank, size, name_len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &name_len);
    if (rank == 0) printf("Workers: %d\n", size);
    printf("Rank %d on host %s\n", rank, host);
    fflush(stdout);

    const double width = 1.0 / (double)INTERVALS;
    double share = 0.0;
    for (long i = rank; i < INTERVALS; i += size) {
        const double x = ((double)i + 0.5) * width;
        share += 4.0 / (1.0 + x * x);
    }
    share *= width;

    double pi = 0.0;
    MPI_Reduce(&share, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("pi is approximately %.16f, error %.2e\n", pi, fabs(pi - M_PI));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
