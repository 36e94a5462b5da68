package org.apache.flink.training.jobgraphtest;

/**
 * A POJO in a job jar under {@code org.apache.flink.} (as Flink's own training jobs keep theirs,
 * {@code org.apache.flink.training.exercises.common.datatypes.TaxiRide}): the exporter must describe
 * it in {@code user_classes} (it is the job's class, not Flink's) and read the states that hold it.
 */
public class Ride {
    public long rideId;
    public long driverId;
    public Fare fare;

    public Ride() {}

    public Ride(long rideId, long driverId) {
        this.rideId = rideId;
        this.driverId = driverId;
        this.fare = new Fare();
        this.fare.total = rideId % 50;
        this.fare.currency = "EUR";
    }
}
